package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSimCommand(t *testing.T) {
	s := NewSim(SimConfig{Binary: "/orch/bin/orch", Scenario: "/ws/plans/feature.sim.yaml"})
	cmd, err := s.Command(Request{RunID: "r1", TaskID: "1.1", Attempt: 2, Prompt: "-p looks like a flag", Workspace: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"/orch/bin/orch", "sim-agent", "--scenario", "/ws/plans/feature.sim.yaml", "-p"}
	wantEnv := []string{"ORCH_RUN_ID=r1", "ORCH_TASK_ID=1.1", "ORCH_ATTEMPT=2"}
	if !reflect.DeepEqual(cmd.Args, wantArgs) || !reflect.DeepEqual(cmd.Env, wantEnv) || cmd.Stdin != "-p looks like a flag" {
		t.Errorf("got %q %q stdin %q\nwant %q %q and the prompt on stdin", cmd.Args, cmd.Env, cmd.Stdin, wantArgs, wantEnv)
	}
	for _, cfg := range []SimConfig{{Scenario: "s"}, {Binary: "orch"}} {
		if _, err := NewSim(cfg).Command(Request{Prompt: "x"}); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if s.Name() != "sim" {
		t.Errorf("Name() = %q", s.Name())
	}
}

func TestPlaySim(t *testing.T) {
	scenario, err := ParseScenario("t.sim.yaml", []byte(`
tasks:
  "1.1":
    - output: |
        QUESTION: Which cache should I use?
        OPTIONS:
        A) Redis  B) In-memory
        RECOMMENDATION: B
    - output: "Implemented the cache."
      files:
        cache.go: "package cache\n"
        internal/lru/lru.go: "package lru\n"
      sh: "cat cache.go; echo to-stderr >&2"
  broken:
    - output: "The tests fail."
      sh: "echo FAIL; exit 3"
      exit: 1
default:
  - output: "Done."
`))
	if err != nil {
		t.Fatal(err)
	}
	withGuidance := BuildPrompt(PromptTask{ID: "1.1", Title: "Cache"}, []string{"B", "use an LRU\nwith 100 entries"})
	tests := []struct {
		name     string
		task     string
		attempt  int
		prompt   string
		wantExit int
		wantText string
		files    map[string]string
	}{
		{
			name: "a question", task: "1.1", attempt: 1, prompt: "plain prompt",
			wantText: "QUESTION: Which cache should I use?\nOPTIONS:\nA) Redis  B) In-memory\nRECOMMENDATION: B",
		},
		{
			name: "files, sh and guidance", task: "1.1", attempt: 2, prompt: withGuidance,
			wantText: "Implemented the cache.\npackage cache\nto-stderr\nGUIDANCE: B\nGUIDANCE: use an LRU with 100 entries",
			files:    map[string]string{"cache.go": "package cache\n", "internal/lru/lru.go": "package lru\n"},
		},
		{
			name: "the last reply repeats", task: "1.1", attempt: 5, prompt: "p",
			wantText: "Implemented the cache.\npackage cache\nto-stderr",
		},
		{
			name: "a failing sh and a failing exit", task: "broken", attempt: 1, prompt: "p", wantExit: 1,
			wantText: "The tests fail.\nFAIL\n(sh exited with status 3)",
		},
		{
			name: "default reply", task: "7", attempt: 1, prompt: "p",
			wantText: "Done.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var out bytes.Buffer
			exit, err := PlaySim(context.Background(), scenario, tt.task, tt.attempt, tt.prompt, dir, &out)
			if err != nil {
				t.Fatal(err)
			}
			if exit != tt.wantExit {
				t.Errorf("exit %d, want %d", exit, tt.wantExit)
			}
			p := NewSim(SimConfig{}).NewParser()
			feed(t, p, bytes.NewReader(out.Bytes()))
			r := p.Finish(exit, nil)
			if r.Unknown != 0 {
				t.Errorf("%d lines the claude parser did not understand:\n%s", r.Unknown, out.Bytes())
			}
			if r.Success != (tt.wantExit == 0) {
				t.Errorf("Success %v with exit %d", r.Success, exit)
			}
			if tt.wantExit == 0 {
				if r.Text != tt.wantText || r.Subtype != "success" {
					t.Errorf("text %q subtype %q\nwant %q", r.Text, r.Subtype, tt.wantText)
				}
			} else if !strings.HasPrefix(r.Text, tt.wantText+"\n\n") || r.Subtype != "error_during_execution" {
				t.Errorf("text %q subtype %q\nwant it to start with %q", r.Text, r.Subtype, tt.wantText)
			}
			if !strings.HasPrefix(r.SessionID, "sim-"+tt.task+"-") || r.Model != simModel {
				t.Errorf("session %q model %q", r.SessionID, r.Model)
			}
			if r.InputTokens <= 0 || r.OutputTokens <= 0 || r.CostUSD <= 0 || r.CostUSD > 0.01 || r.NumTurns != 1 {
				t.Errorf("usage %d/%d cost %v turns %d", r.InputTokens, r.OutputTokens, r.CostUSD, r.NumTurns)
			}
			for path, want := range tt.files {
				got, err := os.ReadFile(filepath.Join(dir, path))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", path, got, err, want)
				}
			}
		})
	}
}

func TestPlaySimSessionIsStable(t *testing.T) {
	s := &Scenario{Default: []Reply{{Output: "a"}, {Output: "b"}}}
	dir := t.TempDir()
	session := func(task string, attempt int, dir string) string {
		var out bytes.Buffer
		if _, err := PlaySim(context.Background(), s, task, attempt, "p", dir, &out); err != nil {
			t.Fatal(err)
		}
		p := newClaudeParser()
		feed(t, p, &out)
		return p.Finish(0, nil).SessionID
	}
	first := session("1.1", 1, dir)
	if again := session("1.1", 2, dir); again != first {
		t.Errorf("attempt 2 has session %q, attempt 1 had %q", again, first)
	}
	if other := session("1.2", 1, dir); other == first {
		t.Errorf("two tasks share session %q", other)
	}
	if other := session("1.1", 1, t.TempDir()); other == first {
		t.Errorf("two workspaces share session %q", other)
	}
}

func TestPlaySimErrors(t *testing.T) {
	t.Run("no reply", func(t *testing.T) {
		s := &Scenario{Tasks: map[string][]Reply{"1": {{Output: "x"}}}}
		var out bytes.Buffer
		if _, err := PlaySim(context.Background(), s, "2", 1, "p", t.TempDir(), &out); err == nil || out.Len() != 0 {
			t.Errorf("err %v, output %q", err, out.String())
		}
	})
	t.Run("a symlink does not carry a write out of the workspace", func(t *testing.T) {
		ws, outside := t.TempDir(), t.TempDir()
		if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
			t.Skip(err)
		}
		s := &Scenario{Default: []Reply{{Output: "x", Files: map[string]string{"link/escaped.txt": "gotcha"}}}}
		_, err := PlaySim(context.Background(), s, "1", 1, "p", ws, &bytes.Buffer{})
		if err == nil {
			t.Error("no error")
		}
		if _, err := os.Stat(filepath.Join(outside, "escaped.txt")); err == nil {
			t.Error("the file was written outside the workspace")
		}
	})
	t.Run("cancelled sh", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		s := &Scenario{Default: []Reply{{Output: "x", Sh: "sleep 30"}}}
		start := time.Now()
		_, err := PlaySim(ctx, s, "1", 1, "p", t.TempDir(), &bytes.Buffer{})
		if err == nil || time.Since(start) > 10*time.Second {
			t.Errorf("err %v after %v", err, time.Since(start))
		}
	})
}
