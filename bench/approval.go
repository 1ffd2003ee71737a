package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
)

// approvalPlan is the one task of the approval measurement.
const approvalPlan = "# Publish\n\n## Task 1: Publish the work\nPush the branch.\n"

// approvalModel is the fake claude's script for it: the agent pushes, which the policy asks a person about, and ends
// its turn once the push ran. The workspace is no repository, so the push itself fails; `|| true` keeps that out of
// the brain's judgement, and the compound command still asks (each of its commands is judged).
const approvalModel = `{"turns":[[{"tool":"Bash","input":{"command":"git push --force origin HEAD || true"}},` +
	`{"text":"Pushed the branch. All tests pass."}]]}`

// clickToApproval measures, for clicks runs of a one-task plan whose claude agent stops at a `git push` the policy
// asks about, the time from a click's POST on the approval's "Allow once" button to the resumed claude process
// starting. The agent is the fake claude of agent/testdata/fakeclaude (Claude Code's documented permission flow, a
// scripted model) under orch's PreToolUse hook: its first process defers the call and exits; the click resumes the
// session with `--resume`, and the fake logs the moment each process starts. The path is clickToResume's, with the
// claude agent's step: the hook's state built from the decision, the command, the process start.
func clickToApproval(ctx context.Context, r *rig, poll time.Duration, clicks int) (*approvalResult, error) {
	fake, err := buildFakeClaude(ctx, r.tmp)
	if err != nil {
		return nil, err
	}
	ws, err := r.workspace("approval", map[string]string{"publish.md": approvalPlan})
	if err != nil {
		return nil, err
	}
	home := filepath.Join(ws, "home")
	log := filepath.Join(ws, "claude.log")
	rc := *r
	rc.claude = fake
	rc.env = append(os.Environ(), "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"FAKE_CLAUDE_MODEL="+approvalModel, "FAKE_CLAUDE_LOG="+log, "FAKE_CLAUDE_VERSION=2.1.186")
	opts := jobs.Options{Agent: "claude", Brain: "heuristic", Sandbox: "local", MaxAttempts: 3, AgentTimeout: time.Minute}
	var (
		mu      sync.Mutex
		started = map[string]time.Time{} // the last task_started of each run: the resumed attempt's, once it ended
	)
	res := &approvalResult{}
	lat, err := measureClicks(ctx, &rc, poll, clicks, clickCase{ws: ws, plan: "publish.md", opts: opts, button: "A",
		observe: func(e jobs.Event, at time.Time) {
			if _, ok := e.Body.(jobs.TaskStartedEvent); ok {
				mu.Lock()
				started[e.RunID] = at
				mu.Unlock()
			}
		},
		resumed: func(runID string) (time.Time, error) {
			at, err := resumedClaude(log, runID)
			if err == nil {
				mu.Lock()
				res.spawn = append(res.spawn, at.Sub(started[runID]))
				mu.Unlock()
			}
			return at, err
		}})
	res.click = lat
	return res, err
}

// approvalResult is the approval measurement: click to the resumed process, and the part of it from the resumed
// attempt's task_started commit to the process starting.
type approvalResult struct {
	click, spawn []time.Duration
}

// buildFakeClaude builds the fake claude into dir.
func buildFakeClaude(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./agent/testdata/fakeclaude")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the fake claude: %v\n%s", err, out)
	}
	return bin, nil
}

// resumedClaude is when run runID's resumed claude process started, from the fake's log.
func resumedClaude(log, runID string) (time.Time, error) {
	f, err := os.Open(log)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p struct {
			Env     map[string]string `json:"env"`
			Resumed bool              `json:"resumed"`
			Start   int64             `json:"start_unix_nano"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return time.Time{}, fmt.Errorf("the fake claude's log: %w", err)
		}
		if p.Resumed && p.Env["ORCH_RUN_ID"] == runID {
			return time.Unix(0, p.Start), nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Time{}, fmt.Errorf("no resumed claude process of run %s in %s", runID, log)
}
