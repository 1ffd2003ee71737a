package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// historyResult is what the embedded store costs a workspace with a long history.
type historyResult struct {
	sizes       []int     // finished runs in the workspaces measured, smallest first
	status      []float64 // p50 ms of `orch status`, the whole process, per size
	runStart    []float64 // p50 ms from `orch run` starting to its agent process starting, per size
	bytesPerRun float64   // state on disk per finished run, in the largest workspace
	note        string
	web         webResult // the web view, in the largest workspace
}

// The workspaces hold this many runs parked, waiting for an answer, besides the finished ones.
const historyParked = 10

// measureHistory builds a workspace per size, each a git repository whose embedded store holds that many finished
// runs and historyParked parked ones, and times the orch binary in it as a person runs it: `orch status` (the latest
// run), and `orch run` of a one-task plan up to the moment its agent process starts. The finished runs are copies of
// a real one — a run of the two-task hello example with the sim agent, its document, events and audit trail — made
// through the store, as if orch had run that many times; the parked ones are real `orch run`s of the ambiguous example.
func measureHistory(ctx context.Context, r *rig, sizes []int, samples int) (historyResult, error) {
	res := historyResult{sizes: sizes}
	for _, n := range sizes {
		ws := filepath.Join(r.tmp, fmt.Sprintf("history-%d", n))
		perRun, err := r.fillHistory(ctx, ws, n)
		if err != nil {
			return res, err
		}
		res.bytesPerRun = perRun
		var status, start []time.Duration
		for i := range samples {
			t0 := time.Now()
			if out, err := r.orchIn(ctx, ws, nil, "status"); err != nil {
				return res, fmt.Errorf("orch status with %d runs: %v\n%s", n, err, out)
			}
			status = append(status, time.Since(t0))
			d, err := r.timeRunStart(ctx, ws, i)
			if err != nil {
				return res, fmt.Errorf("orch run with %d runs: %w", n, err)
			}
			start = append(start, d)
		}
		res.status = append(res.status, percentileMs(status, 0.5))
		res.runStart = append(res.runStart, percentileMs(start, 0.5))
	}
	last := len(sizes) - 1
	ws := filepath.Join(r.tmp, fmt.Sprintf("history-%d", sizes[last]))
	web, err := r.measureWeb(ctx, ws, sizes[last], samples*4)
	if err != nil {
		return res, fmt.Errorf("the web view with %d runs: %w", sizes[last], err)
	}
	res.web = web
	res.note = fmt.Sprintf("A git workspace whose embedded store holds N finished runs (copies of a real two-task run "+
		"with its events and audit) and %d parked ones; %d samples each. `orch status`: the whole process, start to exit. "+
		"Run start: from `orch run` of a one-task plan (local sandbox, heuristic brain) starting to its agent process "+
		"starting. At %d runs: status p50 %.1f ms, run start p50 %.1f ms; at %d runs: status %.1f ms (%.2f×), run start "+
		"%.1f ms. State on disk per finished run: the growth of the state dir (file sizes) over %d runs.",
		historyParked, samples, sizes[0], res.status[0], res.runStart[0], sizes[last], res.status[last],
		res.status[last]/res.status[0], res.runStart[last], sizes[last])
	return res, nil
}

// fillHistory makes ws a git repository with n finished runs and historyParked parked ones in its embedded store, and
// returns the bytes on disk each finished run added.
func (r *rig) fillHistory(ctx context.Context, ws string, n int) (float64, error) {
	if err := historyPlans(ctx, ws); err != nil {
		return 0, err
	}
	if out, err := r.orchIn(ctx, ws, nil, "run", "--agent", "sim", "--brain", "heuristic", "plans/hello.md"); err != nil {
		return 0, fmt.Errorf("the run to copy: %v\n%s", err, out)
	}
	state := filepath.Join(ws, ".orch")
	before, err := stateBytes(state)
	if err != nil {
		return 0, err
	}
	b, err := store.Connect(ctx, store.ConnectConfig{StateDir: state})
	if err != nil {
		return 0, err
	}
	model, err := b.Store.Latest(ctx, nil)
	if err == nil {
		err = copyRun(ctx, b.Store, model, n-1)
	}
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	after, err := stateBytes(state)
	if err != nil {
		return 0, err
	}
	for range historyParked {
		out, err := r.orchIn(ctx, ws, nil, "run", "--agent", "sim", "--brain", "heuristic", "plans/ambiguous_task.md")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			return 0, fmt.Errorf("a run to park: %v\n%s", err, out)
		}
	}
	return float64(after-before) / float64(n-1), nil
}

// historyPlans makes ws a git repository holding the example plans the history measurement runs, and a plan of one
// task.
func historyPlans(ctx context.Context, ws string) error {
	if err := os.MkdirAll(filepath.Join(ws, "plans"), 0o755); err != nil {
		return err
	}
	for _, f := range []string{"hello.md", "hello.sim.yaml", "ambiguous_task.md", "ambiguous_task.sim.yaml"} {
		data, err := os.ReadFile(filepath.Join("examples", "plans", f))
		if err != nil {
			return fmt.Errorf("the bench runs from the repository root: %w", err)
		}
		if err := os.WriteFile(filepath.Join(ws, "plans", f), data, 0o644); err != nil {
			return err
		}
	}
	one := "# One task\n\n## Task 1.1: Start\n\n**Description:**\nSay that the work is done.\n"
	if err := os.WriteFile(filepath.Join(ws, "plans", "one.md"), []byte(one), 0o644); err != nil {
		return err
	}
	return gitInit(ctx, ws)
}

// copyRun saves n copies of model, finished, with its events and audit trail, archiving them as orch does.
func copyRun(ctx context.Context, s *store.Store, model *jobs.Run, n int) error {
	events, err := s.Events(ctx, model.ID, "0", 0)
	if err != nil {
		return err
	}
	audit, err := s.Audit(ctx, model.ID)
	if err != nil {
		return err
	}
	for i := range n {
		r := *model
		r.ID = jobs.NewRunID()
		evs := make([]jobs.Event, len(events))
		for j, e := range events {
			e.ID, e.RunID = "", r.ID
			evs[j] = e
		}
		if err := s.Create(ctx, &r, evs...); err != nil {
			return err
		}
		if len(audit) > 0 {
			_, err := s.Update(ctx, r.ID, func(run *jobs.Run, c *jobs.Change) error {
				run.EndedAt = s.Now().UTC()
				for _, a := range audit {
					a.RunID = r.ID
					c.Audit = append(c.Audit, a)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if (i+1)%500 == 0 || i == n-1 {
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// timeRunStart runs a one-task plan whose agent writes the time it started, and returns how long after `orch run`
// started that was.
func (r *rig) timeRunStart(ctx context.Context, ws string, i int) (time.Duration, error) {
	mark := filepath.Join(r.tmp, fmt.Sprintf("agent-started-%d", i))
	agent := filepath.Join(r.tmp, "agent-start.sh")
	script := "#!/bin/sh\ndate +%s%N > \"$BENCH_AGENT_MARK\"\necho 'Done: the work is complete.'\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		return 0, err
	}
	t0 := time.Now()
	// The agent is given what it needs of orch's environment on purpose, as any cmd: agent is.
	out, err := r.orchIn(ctx, ws, []string{"BENCH_AGENT_MARK=" + mark, "ORCH_AGENT_ENV=BENCH_AGENT_MARK"}, "run", "--agent", "cmd:"+agent+" {prompt}",
		"--brain", "heuristic", "plans/one.md")
	if err != nil {
		return 0, fmt.Errorf("%v\n%s", err, out)
	}
	data, err := os.ReadFile(mark)
	if err != nil {
		return 0, fmt.Errorf("the agent did not start: %w\n%s", err, out)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Unix(0, ns).Sub(t0), nil
}

// orchIn runs the orch binary in dir with stdin empty, and returns its output.
func (r *rig) orchIn(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.orchBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

func gitInit(ctx context.Context, dir string) error {
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "plans"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", args[0], err, out)
		}
	}
	return nil
}

// stateBytes is the size of the files of a state dir, without the worktrees runs work in.
func stateBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "worktrees" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}
