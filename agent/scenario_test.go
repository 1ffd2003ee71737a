package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestLoadScenarioDesignExample(t *testing.T) {
	s, err := LoadScenario(filepath.Join("testdata", "scenario", "design.sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Tasks: map[string][]Reply{
			"1.1": {
				{Output: "QUESTION: Which cache should I use?\nOPTIONS:\nA) Redis  B) In-memory  C) File-based\nRECOMMENDATION: B\n"},
				{
					Output: "Implemented an in-memory LRU cache. All tests pass.",
					Files:  map[string]string{"cache.go": "package cache\n"},
					Sh:     "go test ./...",
				},
			},
		},
		Default: []Reply{{Output: "Done. All tests pass."}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %#v\nwant %#v", s, want)
	}
}

func TestScenarioReply(t *testing.T) {
	s := &Scenario{
		Tasks: map[string][]Reply{
			"1.1": {{Output: "first"}, {Output: "second", Exit: 1}, {Output: "third"}},
			"one": {{Output: "only"}},
		},
		Default: []Reply{{Output: "default 1"}, {Output: "default 2"}},
	}
	tests := []struct {
		task    string
		attempt int
		want    string
		ok      bool
	}{
		{"1.1", 1, "first", true},
		{"1.1", 2, "second", true},
		{"1.1", 3, "third", true},
		{"1.1", 4, "third", true},
		{"1.1", 100, "third", true},
		{"1.1", 0, "first", true},
		{"one", 5, "only", true},
		{"9.9", 1, "default 1", true},
		{"9.9", 7, "default 2", true},
	}
	for _, tt := range tests {
		got, ok := s.Reply(tt.task, tt.attempt)
		if ok != tt.ok || got.Output != tt.want {
			t.Errorf("Reply(%q, %d) = %q, %v; want %q, %v", tt.task, tt.attempt, got.Output, ok, tt.want, tt.ok)
		}
	}
	noDefault := &Scenario{Tasks: map[string][]Reply{"1": {{Output: "x"}}}}
	if _, ok := noDefault.Reply("2", 1); ok {
		t.Error("a task without replies and no default got a reply")
	}
}

func TestParseScenarioErrors(t *testing.T) {
	const name = "examples/x.sim.yaml"
	tests := []struct {
		name string
		yaml string
		want string // the whole error
	}{
		{"empty file", "", "1: empty scenario: want tasks: and/or default:"},
		{"only a comment", "# nothing\n", "1: empty scenario: want tasks: and/or default:"},
		{"bad yaml", "tasks:\n  \"1.1\":\n    - output: \"unterminated\n", "3: found unexpected end of stream"},
		{"bad indentation", "tasks:\n  a:\n    - output: x\n   b: y\n", "4: did not find expected key"},
		{"tab indentation", "tasks:\n\t\"1\": []\n", "2: found character that cannot start any token"},
		{"root is a list", "- output: x\n", "1: want a mapping with tasks: and/or default:, got a list"},
		{"unknown root key", "default:\n  - output: x\ntaks:\n  a: []\n", `3: unknown key "taks" (want tasks or default)`},
		{"tasks is a list", "tasks:\n  - output: x\n", "2: tasks: want a mapping from task id to replies, got a list"},
		{"replies is a mapping", "tasks:\n  \"1.1\":\n    output: x\n", `3: task "1.1": want a list of replies (- output: ...), got a mapping`},
		{"no replies", "tasks:\n  \"1.1\": []\n", `2: task "1.1": no replies`},
		{"reply is a string", "default:\n  - just text\n", `2: default reply 1: want a mapping with output:, got the string "just text"`},
		{"unknown reply key", "tasks:\n  \"1.1\":\n    - output: x\n      exit: 0\n      exitcode: 1\n", `5: task "1.1" reply 1: unknown key "exitcode" (want output, exit, files, sh or cost_usd)`},
		{"negative cost", "default:\n  - output: x\n    cost_usd: -1\n", "3: default reply 1: cost_usd: want a number of dollars from 0 to 1000000, got -1"},
		{"cost in words", "default:\n  - output: x\n    cost_usd: lots\n", "3: default reply 1: cost_usd: want a number of dollars from 0 to 1000000, got lots"},
		{"no output", "default:\n  - output: x\n  - exit: 1\n", "3: default reply 2: no output"},
		{"empty output", "default:\n  - output: \"\"\n", "2: default reply 1: no output"},
		{"null output", "default:\n  - output:\n", "2: default reply 1: output: want a string, got nothing"},
		{"output is a list", "default:\n  - output:\n      - a\n", "3: default reply 1: output: want a string, got a list"},
		{"output is a number", "default:\n  - output: 42\n", "2: default reply 1: output: want a string, got int 42"},
		{"exit is a string", "default:\n  - output: x\n    exit: \"1\"\n", `3: default reply 1: exit: want an integer, got the string "1"`},
		{"exit is a float", "default:\n  - output: x\n    exit: 1.5\n", "3: default reply 1: exit: want an integer, got float 1.5"},
		{"exit too big", "default:\n  - output: x\n    exit: 256\n", "3: default reply 1: exit: 256 is outside 0..255"},
		{"exit negative", "default:\n  - output: x\n    exit: -1\n", "3: default reply 1: exit: -1 is outside 0..255"},
		{"exit huge", "default:\n  - output: x\n    exit: 99999999999999999999\n", "3: default reply 1: exit: want an integer, got float 99999999999999999999"},
		{"files is a list", "default:\n  - output: x\n    files: [a.go]\n", "3: default reply 1: files: want a mapping from path to content, got a list"},
		{"absolute file path", "default:\n  - output: x\n    files:\n      /etc/passwd: root\n", `4: default reply 1: files: file path "/etc/passwd" must be relative and stay inside the workspace`},
		{"escaping file path", "default:\n  - output: x\n    files:\n      a/../../x: y\n", `4: default reply 1: files: file path "a/../../x" must be relative and stay inside the workspace`},
		{"dot-dot file path", "default:\n  - output: x\n    files: {../x: y}\n", `3: default reply 1: files: file path "../x" must be relative and stay inside the workspace`},
		{"directory file path", "default:\n  - output: x\n    files: {\"dir/\": y}\n", `3: default reply 1: files: file path "dir/" names a directory, not a file`},
		{"file content is a mapping", "default:\n  - output: x\n    files:\n      a.go:\n        b: c\n", "5: default reply 1: files: a.go: want a string, got a mapping"},
		{"sh is a list", "default:\n  - output: x\n    sh: [make]\n", "3: default reply 1: sh: want a string, got a list"},
		{"duplicate task", "tasks:\n  a: [{output: x}]\n  a: [{output: y}]\n", `3: duplicate key "a"`},
		{"duplicate reply key", "default:\n  - output: x\n    output: y\n", `3: duplicate key "output"`},
		{"merge key", "base: &b {output: x}\ndefault:\n  - <<: *b\n", `1: unknown key "base" (want tasks or default)`},
		{"merge key in a reply", "default:\n  - output: x\n  - <<: {output: y}\n", `3: merge keys (<<) are not supported`},
		{"unknown anchor", "default:\n  - output: x\n  - *nope\n", "3: unknown anchor 'nope' referenced"},
		{"invalid UTF-8", "default:\n  - output: \"\xff\"\n", "2: invalid UTF-8 (byte 0xff)"},
		{"control character", "default:\n  - output: x\n  - output: \"a\x01\"\n", "3: control character U+0001 is not allowed"},
		{"nothing to reply", "tasks: {}\n", "1: no replies: want tasks: and/or default:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario(name, []byte(tt.yaml))
			want := "scenario " + name + ":" + tt.want
			if err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant   %s", err, want)
			}
		})
	}
}

func TestParseScenarioAccepts(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want *Scenario
	}{
		{
			name: "unquoted numeric task ids keep their text",
			yaml: "tasks:\n  1.10: [{output: a}]\n  2: [{output: b}]\n",
			want: &Scenario{Tasks: map[string][]Reply{"1.10": {{Output: "a"}}, "2": {{Output: "b"}}}},
		},
		{
			name: "aliases share a reply",
			yaml: "tasks:\n  a: [&ok {output: done, exit: 3}]\n  b: [*ok]\n",
			want: &Scenario{Tasks: map[string][]Reply{"a": {{Output: "done", Exit: 3}}, "b": {{Output: "done", Exit: 3}}}},
		},
		{
			name: "an empty file value is an empty file, nested paths are fine",
			yaml: "default:\n  - output: x\n    files:\n      empty.txt:\n      pkg/sub/a.go: \"package sub\\n\"\n",
			want: &Scenario{Tasks: map[string][]Reply{}, Default: []Reply{{Output: "x", Files: map[string]string{"empty.txt": "", "pkg/sub/a.go": "package sub\n"}}}},
		},
		{
			name: "exit in other integer notations",
			yaml: "default:\n  - output: x\n    exit: 0x10\n",
			want: &Scenario{Tasks: map[string][]Reply{}, Default: []Reply{{Output: "x", Exit: 16}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseScenario("t.sim.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Tasks == nil {
				tt.want.Tasks = map[string][]Reply{}
			}
			if !reflect.DeepEqual(s, tt.want) {
				t.Errorf("got  %#v\nwant %#v", s, tt.want)
			}
		})
	}
}

func TestLoadScenarioErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.sim.yaml")
	if err := os.WriteFile(path, []byte("default:\n  - output: ok\n  - outptu: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScenario(path)
	want := "scenario " + path + `:3: default reply 2: unknown key "outptu" (want output, exit, files, sh or cost_usd)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	_, err = LoadScenario(filepath.Join(dir, "missing.sim.yaml"))
	if err == nil || !strings.HasPrefix(err.Error(), "scenario: open ") {
		t.Errorf("err = %v, want scenario: open ...", err)
	}
}

var scenarioErrRe = regexp.MustCompile(`^scenario fuzz\.sim\.yaml:[1-9][0-9]*: .`)

func FuzzParseScenario(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "scenario", "design.sim.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	for _, s := range []string{
		"", "tasks: {}", "default: [{output: x, exit: 300}]", "a: &a [*a]", "tasks:\n  x: [{output: y, files: {../z: w}}]",
		"default:\n  - &r {output: x}\n  - *r\n  - *r\n", "\xef\xbb\xbfdefault: [{output: x}]", "{{{", "- - -", "? [a]\n: b",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario("fuzz.sim.yaml", data)
		if err != nil {
			if !scenarioErrRe.MatchString(err.Error()) {
				t.Fatalf("error without file and line: %q", err)
			}
			return
		}
		check := func(rs []Reply) {
			for _, r := range rs {
				if r.Output == "" || r.Exit < 0 || r.Exit > 255 {
					t.Fatalf("accepted reply %+v", r)
				}
				for p := range r.Files {
					if checkScenarioPath(p) != nil {
						t.Fatalf("accepted file path %q", p)
					}
				}
			}
		}
		for _, rs := range s.Tasks {
			if len(rs) == 0 {
				t.Fatal("accepted a task without replies")
			}
			check(rs)
		}
		check(s.Default)
	})
}

// A reply may say what its invocation cost, for budgets to act on; the sim reports it as Claude Code does.
func TestScenarioCost(t *testing.T) {
	s, err := ParseScenario("cost.sim.yaml", []byte("default:\n  - output: Done.\n    cost_usd: 0.75\n  - output: Done again.\n    cost_usd: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for attempt, want := range map[int]float64{1: 0.75, 2: 2} {
		var buf bytes.Buffer
		if _, err := PlaySim(context.Background(), s, "1.1", attempt, "do it", t.TempDir(), &buf); err != nil {
			t.Fatal(err)
		}
		p := NewClaude(ClaudeConfig{}).NewParser()
		for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
			p.Line(l)
		}
		if got := p.Finish(0, nil).CostUSD; got != want {
			t.Errorf("attempt %d cost %v, want %v", attempt, got, want)
		}
	}
}
