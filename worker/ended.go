package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// An ending is what an agent said, written to a file of this machine the moment the agent ends: before orch examines
// the work, stages it and saves it on the task (keep), each of which takes time (git processes, a store round trip,
// an fsync) in which a worker killed would leave the task's attempt unfinished, and the task run again. A file
// written takes microseconds, and survives the death of the process that wrote it (the kernel has it, whatever
// becomes of the process): the delivery that takes the dead worker's step over on this machine finds it, and settles
// the attempt as if its agent had just ended, instead of running the agent again.
//
// It is dropped once the task holds what it says (Task.Pending), or once the attempt is known not to be this
// machine's any more. A machine that loses power may lose it with the rest of what was not yet on disk (the agent's
// work in the worktree among it): then the task runs again, as it would have without it.
type ending struct {
	Run      string        `json:"run"`
	Task     string        `json:"task"`
	Attempt  int           `json:"attempt"`
	Owner    string        `json:"owner"`
	Said     jobs.Pending  `json:"said"`
	Usage    agent.Result  `json:"usage"`
	Duration time.Duration `json:"duration"`
	Secrets  []string      `json:"secrets,omitempty"`
	Paused   *jobs.Paused  `json:"paused,omitempty"`
}

// endingsDir is where the endings of a run's attempts are: beside its worktree, under the worktrees' root (only orch
// writes there; a sandboxed agent sees its worktree alone), or for a run in a plain directory under Config.Endings.
// "" when there is no such place: the run keeps no endings.
func (w *Worker) endingsDir(r *jobs.Run) string {
	if r.ID != filepath.Base(r.ID) || strings.HasPrefix(r.ID, ".") {
		return ""
	}
	if root := w.endingsRoot(r.Git != nil); root != "" {
		return filepath.Join(root, r.ID)
	}
	return ""
}

func (w *Worker) endingsRoot(worktree bool) string {
	switch {
	case worktree && w.cfg.Workspaces != nil && w.cfg.Workspaces.Root != "":
		return filepath.Join(w.cfg.Workspaces.Root, "ended")
	case !worktree:
		return w.cfg.Endings
	}
	return ""
}

func (w *Worker) endingPath(r *jobs.Run, taskID string, n int) string {
	dir := w.endingsDir(r)
	if dir == "" {
		return ""
	}
	// A task id is the plan's word, escaped to be one name; the attempt number keeps an older attempt's ending from
	// being taken for a newer one.
	return filepath.Join(dir, url.PathEscape(taskID)+"."+strconv.Itoa(n)+".json")
}

// noteEnd writes what the attempt's agent said, as it ended. A failure costs only the protection: it is logged.
func (w *Worker) noteEnd(at *attempt, out *outcome) {
	path := w.endingPath(at.run, at.task.ID, at.n)
	if path == "" {
		return
	}
	// Bounded as the task would keep it (keep): the file is written as the agent ends, and must cost microseconds.
	said, usage := out.said, out.usage
	said.Text = safetext.Bound(said.Text, maxKept)
	usage.Text = ""
	e := ending{Run: at.run.ID, Task: at.task.ID, Attempt: at.n, Owner: at.owner.id, Said: said, Usage: usage,
		Duration: out.duration, Secrets: out.secrets, Paused: out.paused}
	if err := writeEnding(path, e); err != nil {
		w.log.Warn("noting what the agent said as it ended", "run_id", at.run.ID, "task_id", at.task.ID, "err", err)
	}
}

func writeEnding(path string, e ending) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	// Whole or not at all: a reader never finds half of one. The directory may go between the two (another run's end
	// removes it when it looks empty): it is made again.
	tmp := path + ".tmp"
	for range 3 {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err = os.WriteFile(tmp, data, 0o600); err == nil {
			if err = os.Rename(tmp, path); err == nil {
				return nil
			}
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return err
}

// endingOf returns the ending of the task's attempt n, noted by owner on this machine, when there is one.
func (w *Worker) endingOf(r *jobs.Run, taskID string, n int, owner string) (*ending, error) {
	runID := r.ID
	path := w.endingPath(r, taskID, n)
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e ending
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("the ending %s: %w", path, err)
	}
	if e.Run != runID || e.Task != taskID || e.Attempt != n || e.Owner != owner {
		return nil, nil // another attempt's (an older orch, a file moved by hand): not this one's word
	}
	return &e, nil
}

// dropEnding removes the attempt's ending: the task holds what it says, or the attempt is not this machine's to
// settle.
func (w *Worker) dropEnding(r *jobs.Run, taskID string, n int) {
	runID := r.ID
	if path := w.endingPath(r, taskID, n); path != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("removing an attempt's ending", "run_id", runID, "task_id", taskID, "err", err)
		}
	}
}

// dropEndings removes what is left of a run's endings once the run is over (its step lock's directory with them:
// steplock.go), and the directory of endings when no other run has any: nothing stays behind in a state directory
// that needs it no more. A delivery of the run that waits for the lock finds the run over.
func (w *Worker) dropEndings(r *jobs.Run) error {
	dir := w.endingsDir(r)
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Remove(filepath.Dir(dir)); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) &&
		!errors.Is(err, syscall.EEXIST) {
		return err
	}
	return nil
}

// takeEnding puts the ending's word in out, as runAgent would have had the agent just ended. The file is orch's, where a
// sandboxed agent cannot write (in Docker it is not mounted; an agent run as another user cannot enter the
// directory); an agent run as orch's own user can write anywhere orch can, so what it says is taken through the
// intake again all the same: what was redacted stays so, and a secret put in the file is found and taken out.
func (w *Worker) takeEnding(e *ending, out *outcome) {
	out.ran = true
	out.said, out.usage, out.duration = e.Said, e.Usage, e.Duration
	out.paused = e.Paused
	in := &intake{w: w}
	in.note(e.Secrets)
	res, stderr := in.result(agent.Result{Text: e.Said.Text, Errors: e.Said.Errors}, e.Said.Stderr)
	out.said.Text, out.said.Errors, out.said.Stderr = res.Text, res.Errors, stderr
	out.usage.Text, out.usage.Errors = res.Text, res.Errors
	out.secrets = in.secrets()
}
