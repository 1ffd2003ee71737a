package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/workspace"
)

// A run whose workspace is a git repository works in a worktree of its own, on its own branch (package workspace).
// What a transition decides about the run's work happens in the worktree before the transition is saved, so that the
// events it emits can name it: the commit of the task it completes, the push, the pull request of the run it
// completes. Whether a transition may finish a task or end the run is read, where it can be, from what it applies —
// the verdict on an attempt (settleFinishes), a person's answer (answerFinishes) — before any transaction: one that
// cannot runs once, in the transaction that saves it. One that may is first played on a copy of the run (preview) to
// learn what it finishes; the real transaction then records what was done. A transition is played more than once
// (a preview, and the store's Update plays it again on a conflict), so it must be pure: it changes the run and the
// change it is given and nothing else, and plays the same on the same run (purity_test.go).

// delivery is what was done in a run's worktree for one transition.
type delivery struct {
	taskID string
	commit string
	stat   workspace.Stat // zero when it could not be read
	base   string         // the base commit, when the run learned it now (a run that clones)
	pushed string         // the commit pushed, when one was
	moved  bool           // the repository's branch was moved to stat.Head by this delivery
	// elsewhere says the repository's branch was found at a commit orch did not make (workspace.ErrMoved): the task's
	// commit is not on it, and someone must look.
	elsewhere string
	pr        string
	events    []jobs.Event // what went wrong, and the push
}

// worktree checks out run r's worktree, when the run has a branch.
func (w *Worker) worktree(ctx context.Context, r *jobs.Run) (*workspace.Worktree, error) {
	if r.Git == nil {
		return nil, nil
	}
	if w.cfg.Workspaces == nil {
		return nil, errors.New("this worker keeps no worktrees, and the run works on a branch of its own")
	}
	g := *r.Git
	wt, err := w.cfg.Workspaces.Checkout(ctx, r.ID, &g)
	if err != nil {
		return nil, fmt.Errorf("preparing the run's worktree: %w", err)
	}
	if r.Git.BaseCommit == "" {
		r.Git.BaseCommit = g.BaseCommit
	}
	return &wt, nil
}

// workdir is where run r's agent works: its worktree, or its plain workspace.
func workdir(r *jobs.Run, wt *workspace.Worktree) string {
	if wt != nil {
		return wt.Dir
	}
	return r.Workspace
}

// transition saves fn, a transition of a run that is not a step (a person's answer applied), with what it needs done
// in the run's worktree first: only a transition that finishes a task or the run touches the worktree, so that an
// answer that just sends the agent back to work is not slowed down by git. finishing says, from the run as it is
// before any transaction, whether fn may finish something: if not, fn runs once, in the transaction that saves it. If
// fn finishes something there all the same (what finishing reads cannot see everything: an escalation cap hit on the
// way), that transaction is given up and fn delivered first as one that may.
func (w *Worker) transition(ctx context.Context, runID string, finishing func(*jobs.Run) bool,
	fn func(*jobs.Run, *jobs.Change) error) (*jobs.Run, error) {
	r, err := w.cfg.Store.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	if r.Git != nil && !r.Status.Terminal() && finishing(r) {
		return w.deliverFirst(ctx, r, fn)
	}
	run, err := w.saveUnlessDelivering(ctx, runID, fn)
	if !errors.Is(err, errDeliver) {
		return run, err
	}
	if r, err = w.cfg.Store.Get(ctx, runID); err != nil {
		return nil, err
	}
	return w.deliverFirst(ctx, r, fn)
}

// saveUnlessDelivering saves fn in one transaction, unless it finishes a task or the run of a run with a branch: that
// needs the worktree's work delivered first, outside any transaction, and errDeliver says so with nothing saved.
func (w *Worker) saveUnlessDelivering(ctx context.Context, runID string, fn func(*jobs.Run, *jobs.Change) error) (*jobs.Run, error) {
	return w.cfg.Store.Update(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		cur, ended := currentTaskID(r), r.Status.Terminal()
		if err := fn(r, c); err != nil {
			return err
		}
		if r.Git != nil && !ended && finishes(cur, r) {
			return errDeliver
		}
		return nil
	})
}

// deliverFirst saves fn, a transition that may finish a task or the run, with the work it needs done in the run's
// worktree done first. before is the run as read before any transaction: fn is played on a copy of it to learn what
// it finishes.
func (w *Worker) deliverFirst(ctx context.Context, before *jobs.Run, fn func(*jobs.Run, *jobs.Change) error) (*jobs.Run, error) {
	if before.Git == nil {
		return w.cfg.Store.Update(ctx, before.ID, fn) // no branch to deliver to
	}
	after := preview(before, fn)
	if after == nil || !finishes(currentTaskID(before), after) {
		return w.cfg.Store.Update(ctx, before.ID, fn) // nothing to deliver: fn says what it makes of the run as it is now
	}
	wt, err := w.worktree(ctx, before)
	if err != nil {
		w.log.Warn("the run's worktree is not available; its work is not committed now", "run_id", before.ID, "err", err)
		return w.cfg.Store.Update(ctx, before.ID, fn)
	}
	// The run must still be where the transition found it when its branch moves: a second answer, or a step, may have
	// moved it on meanwhile.
	unmoved := func(r *jobs.Run, _ *jobs.Change) error {
		if r.Seq != before.Seq || r.Status != before.Status {
			return errStale
		}
		return nil
	}
	d, err := w.deliver(ctx, wt, before, after, unmoved)
	if errors.Is(err, errStale) {
		return w.cfg.Store.Update(ctx, before.ID, fn) // fn says what it makes of the run as it is now
	}
	if err != nil {
		return nil, err
	}
	return w.cfg.Store.Update(ctx, before.ID, recorded(d, fn))
}

// errDeliver ends a transaction that must wait for work in the run's worktree.
var errDeliver = errors.New("the transition needs the run's worktree first")

// preview is what fn makes of a copy of r; nil when fn changes nothing.
func preview(r *jobs.Run, fn func(*jobs.Run, *jobs.Change) error) *jobs.Run {
	after, err := clone(r)
	if err != nil {
		return nil
	}
	c := jobs.NewChange(after)
	if fn(after, c) != nil || c.Err() != nil {
		return nil
	}
	return after
}

// finishes reports whether a transition that left the run at after finishes its task taskID (the current one before
// it) or the run.
func finishes(taskID string, after *jobs.Run) bool {
	if after.Status.Terminal() {
		return true
	}
	t := after.Task(taskID)
	return t != nil && t.Status.Done() && t.Commit == ""
}

// answerFinishes reports, from the answer to escalation escID of r alone, whether applying it (Worker.resume) may
// finish the task it is about or end the run, and so needs the run's worktree first: a gate's choice, which the
// pipeline routes on (the gate passes or fails, and the walk may end); a conversation's ending; a forced task; an
// attempt that only a trigger held, accepted; a gate let through after a loop stop, which asks at once or fails with
// nowhere to go. An answer that sends the agent back to work (another attempt, guidance, a conversation's next
// message) finishes nothing; nor does one the run has moved past (the transition finds it stale).
func answerFinishes(r *jobs.Run, escID string) bool {
	e := r.Escalation(escID)
	if e == nil || e.Resolution == nil {
		return false
	}
	res := e.Resolution
	switch e.Trigger {
	case jobs.TriggerGate:
		return true
	case jobs.TriggerChat:
		return escalation.ChatCommand(res) != ""
	}
	t := r.Task(e.TaskID)
	return res.Type == jobs.ResolveForce || escalation.Accepts(e, res) || t != nil && t.Kind == jobs.KindGate
}

// settleFinishes reports, from the verdict on the attempt alone (as it is judged on r, the run as the step found it),
// whether settling out (Worker.settlement) may finish the task or end the run, and so must be played on a copy first
// to learn what the commit holds: a completion, a failure the pipeline routes, or a question, which may hit the
// escalation cap and end the run. A retry, a pause for the brain, a conversation's reply and a call a person is asked
// about (which counts against no cap) finish nothing.
func (w *Worker) settleFinishes(r *jobs.Run, out *outcome) bool {
	t := r.Current()
	if t == nil {
		return false // the fence refuses the settlement
	}
	direct := out.execErr == nil && out.unavailable == nil
	switch {
	case t.Kind == jobs.KindChat && direct:
		return out.security() // a reply parks the run on the conversation; a turn held for a person asks about it
	case out.paused != nil && out.execErr == nil && !out.security():
		return false // the call is asked about, or the agent goes on
	}
	switch judgeAttempt(w.facts(r, t, out)).kind {
	case vRetry, vPause:
		return false
	}
	return true
}

// deliver does in the worktree what going from before to after needs: the commit of the task it finishes, the
// branch's numbers, the branch moved to the commit and pushed, the pull request of the run it completes. It returns nil
// when there is nothing to do (no worktree). Before the branch moves anywhere another worker could see, fence is
// checked and the commit recorded as one the run is moving to (Worker.intend): a stale delivery learns it lost its
// step there (errLost, errStale) and moves nothing.
func (w *Worker) deliver(ctx context.Context, wt *workspace.Worktree, before, after *jobs.Run, fence func(*jobs.Run, *jobs.Change) error) (*delivery, error) {
	if wt == nil || before.Git == nil || after == nil {
		return nil, nil
	}
	d := &delivery{base: before.Git.BaseCommit}
	w.commitFinished(ctx, wt, before, after, d)
	st, err := w.cfg.Workspaces.Stat(ctx, *wt, before.Git.BaseCommit)
	if err != nil {
		d.fail(before.ID, "", "reading what the branch holds", err)
		return d, nil
	}
	moved, err := w.moveBranch(ctx, wt, before, after, fence, st, d)
	if err != nil {
		return nil, err
	}
	if !moved {
		return d, nil
	}
	d.stat = st
	if err := w.openPullRequest(ctx, before, after, fence, d); err != nil {
		return nil, err
	}
	return d, nil
}

// commitFinished commits the work of the task that going from before to after finishes, if it does.
func (w *Worker) commitFinished(ctx context.Context, wt *workspace.Worktree, before, after *jobs.Run, d *delivery) {
	cur := before.Current()
	if cur == nil {
		return
	}
	if t := after.Task(cur.ID); t != nil && t.Status.Done() && t.Commit == "" {
		sha, err := w.cfg.Workspaces.CommitTask(ctx, *wt, before.ID, t.ID, t.Title, t.Summary)
		if err != nil {
			d.fail(before.ID, t.ID, "committing the task's work", err)
		}
		d.taskID, d.commit = t.ID, sha
	}
}

// moveBranch moves the run's branch to the worktree's head (st) and pushes it when the step owes the remote a push,
// under the fence's intent. moved is false when the branch could not be moved: then d says why, and nothing else of
// the delivery is done; an error is the fence's (the step is lost or stale) or Redis's.
func (w *Worker) moveBranch(ctx context.Context, wt *workspace.Worktree, before, after *jobs.Run,
	fence func(*jobs.Run, *jobs.Change) error, st workspace.Stat, d *delivery) (moved bool, err error) {
	g := before.Git
	from := g.Head
	if from == "" {
		from = g.BaseCommit
	}
	push := g.Push != "" && st.Commits > 0 && st.Head != g.Pushed && (d.commit != "" || after.Status.Terminal())
	if st.Head == from && !push {
		return true, nil
	}
	moving, err := w.intend(ctx, before.ID, fence, st.Head)
	if err != nil {
		return false, err
	}
	if st.Head != from {
		if err := w.cfg.Workspaces.MoveBranch(ctx, *wt, from, moving); err != nil {
			// The task's commit is not on the branch: it is not the task's.
			d.fail(before.ID, d.taskID, "moving the run's branch to the task's commit", err)
			d.commit = ""
			if errors.Is(err, workspace.ErrMoved) {
				d.elsewhere = safetext.Redact(err.Error())
			}
			return false, nil
		}
		d.moved = true
	}
	if !push {
		return true, nil
	}
	if err := w.cfg.Workspaces.Push(ctx, *wt, g.Push, g.Branch, g.Pushed, moving); err != nil {
		d.fail(before.ID, d.taskID, "pushing the run's branch", err)
		return true, nil
	}
	d.pushed = st.Head
	d.events = append(d.events, jobs.NewEvent(before.ID, d.taskID, jobs.BranchPushedEvent{Remote: safetext.WithoutUserinfo(g.Push),
		Branch: g.Branch, Commit: workspace.Short(st.Head)}))
	return true, nil
}

// openPullRequest opens the pull request of a run that going to after completes: of the branch as pushed (no push,
// no pull request), and only by the step's owner, as a push is.
func (w *Worker) openPullRequest(ctx context.Context, before, after *jobs.Run, fence func(*jobs.Run, *jobs.Change) error, d *delivery) error {
	g, st := before.Git, d.stat
	if after.Status != jobs.RunCompleted || w.cfg.PullRequests == nil || g.PullRequest != "" || st.Commits == 0 ||
		g.Push == "" || (d.pushed == "" && g.Pushed != st.Head) {
		return nil
	}
	// When this delivery pushed nothing, no intent checked its fence yet.
	if d.pushed == "" {
		r, err := w.cfg.Store.Get(ctx, before.ID)
		if err != nil {
			return err
		}
		if err := fence(r, nil); err != nil {
			return err
		}
	}
	record(after, d)
	url, err := w.cfg.PullRequests(ctx, after)
	if err != nil {
		d.fail(before.ID, "", "opening the pull request", err)
	}
	d.pr = url
	return nil
}

func (d *delivery) fail(runID, taskID, what string, err error) {
	d.events = append(d.events, jobs.NewEvent(runID, taskID, jobs.GitErrorEvent{
		Error: safetext.Redact(what + ": " + err.Error())}))
}

// record writes what was done onto the run, in the transaction that saves the transition: before fn runs, so that
// the events fn emits name the commit and the branch.
func record(r *jobs.Run, d *delivery) {
	if d == nil || r.Git == nil {
		return
	}
	g := r.Git
	if g.BaseCommit == "" {
		g.BaseCommit = d.base
	}
	if d.stat.Head != "" {
		g.Head, g.Commits = d.stat.Head, d.stat.Commits
		g.FilesChanged, g.Insertions, g.Deletions = d.stat.FilesChanged, d.stat.Insertions, d.stat.Deletions
	}
	if d.pushed != "" {
		g.Pushed = d.pushed
	}
	if d.stat.Head != "" && (d.pushed == d.stat.Head || g.Push == "" && d.moved) {
		// This delivery itself put the branch at the head it records, here and on the remote: a dead step's move
		// can no longer be what the branch holds. (That the record agrees with itself says nothing of the refs: a
		// dead step's push may have landed after the record was made.)
		g.Moving = nil
	}
	if d.pr != "" {
		g.PullRequest = d.pr
	}
	if t := r.Task(d.taskID); t != nil && d.commit != "" {
		t.Commit = d.commit
	}
}

// recorded saves the transition fn with what d did: d's record and events before fn's (a follower that stops at the
// run's end has seen the push); a commit on a task that fn did not finish after all (the run changed meanwhile) stays
// on the branch, but not on the task.
func recorded(d *delivery, fn func(*jobs.Run, *jobs.Change) error) func(*jobs.Run, *jobs.Change) error {
	if d == nil {
		return fn
	}
	return func(r *jobs.Run, c *jobs.Change) error {
		record(r, d)
		for _, e := range d.events {
			c.Emit(e)
		}
		if err := fn(r, c); err != nil {
			return err
		}
		if t := r.Task(d.taskID); t != nil && !t.Status.Done() {
			t.Commit = ""
		}
		return nil
	}
}

// clone is a deep copy of a run, through the JSON it is saved as.
func clone(r *jobs.Run) (*jobs.Run, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var cp jobs.Run
	return &cp, jobs.DecodeRun(data, &cp)
}

// A run that works in a plain directory holds it while it runs (a parked run lets go: nobody's work may wait on a
// question nobody answers); a run that finds it held waits, without a worker, and says for whom.

// place names the plain workspace of r on this host.
func (w *Worker) place(r *jobs.Run) string {
	abs, err := filepath.Abs(r.Workspace)
	if err != nil {
		abs = r.Workspace
	}
	return w.host + "\x00" + abs
}

// holdWorkspace makes r the holder of its plain workspace, taking it over from a run that is over. It returns the run
// r must wait for, or "".
func (w *Worker) holdWorkspace(ctx context.Context, r *jobs.Run) (string, error) {
	if r.Git != nil || r.Workspace == "" {
		return "", nil
	}
	for range 3 {
		holder, err := w.cfg.Store.Hold(ctx, w.place(r), r.ID)
		if err != nil || holder == "" {
			return "", err
		}
		other, err := w.cfg.Store.Get(ctx, holder)
		switch {
		case errors.Is(err, jobs.ErrRunNotFound) || err == nil && other.Status.Terminal():
			if _, err := w.cfg.Store.Let(ctx, w.place(r), holder); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		default:
			return holder, nil
		}
	}
	return "", fmt.Errorf("the workspace %s keeps changing hands", r.Workspace)
}

// waitEvery is how often a run waiting for its plain workspace looks again, should the run that lets go of it not wake
// it (its worker died first).
const waitEvery = 10 * time.Second

// waitForWorkspace records that run runID waits for holder (said once per holder) and looks again in a while.
func (w *Worker) waitForWorkspace(ctx context.Context, runID string, seq int64, holder string) error {
	status := ""
	if other, err := w.cfg.Store.Get(ctx, holder); err == nil {
		status = string(other.Status)
	}
	r, err := w.cfg.Store.Update(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		if r.Status != jobs.RunRunning || r.Seq != seq {
			return errStale
		}
		if r.Waiting == holder {
			return errStale // said already
		}
		r.Waiting = holder
		c.Emit(jobs.NewEvent(r.ID, currentTaskID(r), jobs.WorkspaceBusyEvent{Workspace: r.Workspace, Run: holder,
			Status: status}))
		return nil
	})
	if errors.Is(err, errStale) {
		r, err = w.cfg.Store.Get(ctx, runID)
	}
	if err != nil {
		return err
	}
	if r.Status != jobs.RunRunning || r.Seq != seq {
		return nil // moved on meanwhile (an abort): nothing to wait for
	}
	return w.stepQueue().StepLater(ctx, r.Team(), r.ID, seq, r.AgentTimeout(r.Current()), time.Now().Add(waitEvery),
		strconv.FormatInt(time.Now().UnixNano(), 36))
}

// wake has the step of run id, waiting for a workspace, look again now.
func (w *Worker) wake(ctx context.Context, id string) error {
	r, err := w.cfg.Store.Get(ctx, id)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return nil
	}
	if err != nil || r.Status != jobs.RunRunning {
		return err
	}
	return w.stepQueue().StepLater(ctx, r.Team(), r.ID, r.Seq, r.AgentTimeout(r.Current()), time.Now(),
		strconv.FormatInt(time.Now().UnixNano(), 36))
}

// letGo gives up what a run that stopped holds in its workspace: its hold on a plain directory, and once it is over
// (final) its worktree (the branch stays; work left uncommitted is kept under a ref of its own, recorded on the run).
func (w *Worker) letGo(ctx context.Context, r *jobs.Run, final bool) error {
	if final {
		if err := w.dropEndings(r); err != nil {
			w.log.Warn("removing the endings of a run that is over", "run_id", r.ID, "err", err)
		}
	}
	if r.Git == nil {
		if r.Workspace == "" {
			return nil
		}
		next, err := w.cfg.Store.Let(ctx, w.place(r), r.ID)
		if err != nil || next == "" {
			return err
		}
		return w.wake(ctx, next)
	}
	if !final || w.cfg.Workspaces == nil {
		return nil
	}
	if !w.cfg.Workspaces.Has(r.ID) {
		return nil
	}
	// A worker shutting down right after the run ended (orch run exits then) must not leave the worktree half
	// removed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	ref, err := w.cfg.Workspaces.Remove(ctx, r.ID, r.Git)
	if ref != "" {
		_, uerr := w.cfg.Store.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
			r.Git.Unfinished = ref
			return nil
		})
		err = errors.Join(err, uerr)
	}
	return err
}

// sweepEvery is how often a worker removes the worktrees of runs that ended while no worker of its own was there to
// do it (an abort answered from Slack or the terminal while the run was parked, a worker killed right after the end).
const sweepEvery = time.Minute

// SweepWorktrees removes the worktrees of runs that are over (or unknown), and returns how many it removed.
func (w *Worker) SweepWorktrees(ctx context.Context) (int, error) {
	if w.cfg.Workspaces == nil {
		return 0, nil
	}
	// A run's worktree and orch's git directory of it: either may be what a crash left of the pair.
	var entries []os.DirEntry
	seen := map[string]bool{}
	for _, d := range []string{"worktrees", "gitdirs", "ended"} {
		list, err := os.ReadDir(filepath.Join(w.cfg.Workspaces.Root, d))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		for _, e := range list {
			if !seen[e.Name()] {
				seen[e.Name()] = true
				entries = append(entries, e)
			}
		}
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") { // spares and views are the manager's own
			continue
		}
		r, err := w.cfg.Store.Get(ctx, e.Name())
		switch {
		case errors.Is(err, jobs.ErrRunNotFound):
			continue // another deployment's, or a store that was emptied: not ours to judge
		case err != nil:
			errs = append(errs, err)
			continue
		case !r.Status.Terminal():
			continue
		case r.Git == nil:
			// A plain run keeps no worktree here, only its endings, and its step lock with them, where they are kept.
			if err := w.dropEndings(r); err != nil {
				errs = append(errs, fmt.Errorf("removing what run %s kept here: %w", r.ID, err))
			}
			continue
		}
		if err := w.letGo(ctx, r, true); err != nil {
			errs = append(errs, fmt.Errorf("removing the worktree of run %s: %w", r.ID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
