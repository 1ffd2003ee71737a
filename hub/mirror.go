package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// The mirror keeps each run started on GitHub up to date in its issue: one status comment, edited in place — at
// once for a question, an answer, a pause and the end, and for progress alone at most every ProgressEvery, so that a
// run of many steps costs a handful of API calls — and a comment per question, edited when it is answered from
// anywhere. Its state is in the store, so a restarted orch carries on where the last one stopped: nothing posted
// twice, nothing lost. It is a surface (runs.Surface): each event reaches it through runs.Present.

// The fields of a run's state in the store.
const (
	fieldOwner    = "owner"
	fieldRepo     = "repo"
	fieldIssue    = "issue"
	fieldStatus   = "status"    // the status comment's id
	fieldCursor   = "cursor"    // the last event handled
	fieldLatest   = "latest"    // the latest progress line
	fieldEdited   = "edited"    // when the status comment was last edited, Unix milliseconds
	fieldQuestion = "question:" // + escalation id: its comment's id
	// fieldReplyTries + a task's id: the passes that failed to answer its review thread.
	fieldReplyTries = "reply_tries:"
	maxReplyTries   = 5
	lockTTL         = 2 * time.Minute
)

type mirror struct {
	cfg      Config
	log      *slog.Logger
	state    *store.Mirror
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	// hold is when GitHub's rate limit lets orch talk again: the mirror does not call before (its state waits in the
	// store, and nothing is lost).
	hold time.Time
	// ended, when set, is told of each followed run that ended, once its issue says so (the desk looks at the run's
	// pull request again).
	ended func(ctx context.Context, r *jobs.Run, repo forge.Repo)
}

func newMirror(cfg Config, state *store.Mirror) *mirror {
	return &mirror{cfg: cfg, log: cfg.Log, state: state, stop: make(chan struct{}), done: make(chan struct{})}
}

func (m *mirror) start() { go m.loop() }

func (m *mirror) shutdown() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
}

// follow starts keeping run runID up to date in issue of repo, and writes its status comment at once. fields are more
// of the run's state, as field, value pairs (the review threads its tasks answer).
func (m *mirror) follow(ctx context.Context, runID string, repo forge.Repo, issue int, fields ...string) error {
	fields = append([]string{fieldOwner, repo.Owner, fieldRepo, repo.Name, fieldIssue, strconv.Itoa(issue)}, fields...)
	if err := m.state.Save(ctx, runID, fields...); err != nil {
		return err
	}
	if err := m.state.Follow(ctx, runID); err != nil {
		return err
	}
	return m.sync(ctx, runID)
}

func (m *mirror) loop() {
	defer close(m.done)
	t := time.NewTicker(m.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		if m.cfg.Now().Before(m.hold) {
			continue
		}
		m.pass()
	}
}

// pass brings every followed run's issue up to date, until GitHub's rate limit says to stop.
func (m *mirror) pass() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids, err := m.state.Followed(ctx)
	if err != nil {
		m.log.Warn("github: listing the runs to keep up to date", "err", err)
	}
	for _, id := range ids {
		err := m.sync(ctx, id)
		var rl *forge.RateLimitError
		if errors.As(err, &rl) {
			m.hold = rl.RetryAt
			m.log.Warn("github: rate limited; the issues are brought up to date after the limit", "until", rl.RetryAt, "err", err)
			return
		}
		if forge.Gone(err) {
			// The issue (or the comment orch keeps) was deleted, or the repository went: nothing will bring it back.
			m.log.Warn("github: a run's issue is gone; it is no longer kept up to date there", "run_id", id, "err", err)
			if err := m.state.Unfollow(ctx, id); err != nil {
				m.log.Warn("github: unfollowing a run", "run_id", id, "err", err)
			}
			continue
		}
		if err != nil {
			m.log.Warn("github: keeping a run's issue up to date", "run_id", id, "err", err)
		}
	}
}

// sync shows a run's new events in its issue, under the run's lock (several orch processes may mirror).
func (m *mirror) sync(ctx context.Context, runID string) error {
	release, ok, err := m.state.TryLock(ctx, runID, lockTTL)
	if err != nil || !ok {
		return err
	}
	defer release()
	st, err := m.state.State(ctx, runID)
	if err != nil {
		return err
	}
	issue, _ := strconv.Atoi(st[fieldIssue])
	t := &thread{m: m, repo: forge.Repo{Owner: st[fieldOwner], Name: st[fieldRepo]}, issue: issue, st: st}
	if t.repo.Owner == "" || issue == 0 {
		return m.state.Unfollow(ctx, runID) // nothing says where: not a run of ours
	}
	cursor := st[fieldCursor]
	if cursor == "" {
		cursor = "0"
	}
	// The events first, then the run: the run is at least as new as every event read, so a question an event names
	// is in it.
	evs, err := m.cfg.Store.Events(ctx, runID, cursor, 0)
	if err != nil {
		return err
	}
	if t.run, err = m.cfg.Store.Get(ctx, runID); err != nil {
		return err
	}
	if st[fieldStatus] == "" {
		t.urgent = true
	}
	for _, ev := range evs {
		if err := runs.Present(ctx, t, ev); err != nil {
			return err
		}
		if err := m.state.Save(ctx, runID, fieldCursor, ev.ID); err != nil {
			return err
		}
	}
	if err := t.status(ctx); err != nil {
		return err
	}
	if t.ended {
		return m.end(ctx, t)
	}
	return nil
}

// end finishes with a run whose issue shows its end: its review threads are answered, it is no longer followed, and
// the desk hears of it.
func (m *mirror) end(ctx context.Context, t *thread) error {
	if err := t.replyThreads(ctx); err != nil {
		return err
	}
	if err := m.state.Unfollow(ctx, t.run.ID); err != nil {
		return err
	}
	if m.ended != nil {
		m.ended(ctx, t.run, t.repo)
	}
	return nil
}

// thread is one pass over a run's new events, as the surface its issue is.
type thread struct {
	m      *mirror
	repo   forge.Repo
	issue  int
	st     map[string]string
	run    *jobs.Run
	dirty  bool // the status comment is behind
	urgent bool // and must be brought up to date now
	ended  bool
}

var _ runs.Surface = (*thread)(nil)

// Progress notes the latest line people see; the status comment shows it at its next edit.
func (t *thread) Progress(_ context.Context, ev jobs.Event) error {
	if d := ev.Describe(); !d.Quiet {
		t.st[fieldLatest], t.dirty = d.String(), true
	}
	return nil
}

// Ask writes the question's comment, once.
func (t *thread) Ask(ctx context.Context, _ jobs.Event, q jobs.EscalationEvent) error {
	t.urgent = true
	e := t.run.Escalation(q.EscalationID)
	if e == nil || t.st[fieldQuestion+e.ID] != "" {
		return nil
	}
	body := QuestionComment(t.run, e, t.m.cfg.Mention)
	if e.Resolution != nil {
		body = AnsweredComment(t.run, e) // answered elsewhere before it could be asked here
	}
	id, err := t.m.cfg.GitHub.Comment(ctx, t.repo, t.issue, body)
	if err != nil {
		return fmt.Errorf("asking escalation %s: %w", e.ID, err)
	}
	t.st[fieldQuestion+e.ID] = strconv.FormatInt(id, 10)
	return t.m.state.Save(ctx, t.run.ID, fieldQuestion+e.ID, t.st[fieldQuestion+e.ID])
}

// Answered edits the question's comment to say who answered, from where, after how long.
func (t *thread) Answered(ctx context.Context, _ jobs.Event, a jobs.ResolutionEvent) error {
	t.urgent = true
	e := t.run.Escalation(a.EscalationID)
	id, _ := strconv.ParseInt(t.st[fieldQuestion+a.EscalationID], 10, 64)
	if e == nil || e.Resolution == nil || id == 0 {
		return nil
	}
	err := t.m.cfg.GitHub.EditComment(ctx, t.repo, id, AnsweredComment(t.run, e))
	if err != nil && !forge.Gone(err) { // a question's comment someone deleted stays deleted
		return fmt.Errorf("marking escalation %s answered: %w", e.ID, err)
	}
	return nil
}

// Paused brings the status comment up to date now.
func (t *thread) Paused(context.Context, jobs.Event) error {
	t.urgent = true
	return nil
}

// Ended brings the status comment to the run's end, after which the run is no longer followed.
func (t *thread) Ended(context.Context, jobs.Event) error {
	t.urgent, t.ended = true, true
	return nil
}

// status writes or edits the run's status comment when it is behind: at once when urgent, else when the last edit
// is ProgressEvery old.
func (t *thread) status(ctx context.Context) error {
	now := t.m.cfg.Now()
	edited, _ := strconv.ParseInt(t.st[fieldEdited], 10, 64)
	due := now.Sub(time.UnixMilli(edited)) >= t.m.cfg.ProgressEvery
	if !t.urgent && !(t.dirty && due) {
		return t.m.state.Save(ctx, t.run.ID, fieldLatest, t.st[fieldLatest])
	}
	body := StatusComment(t.run, t.st[fieldLatest], t.link())
	id, _ := strconv.ParseInt(t.st[fieldStatus], 10, 64)
	if id != 0 {
		err := t.m.cfg.GitHub.EditComment(ctx, t.repo, id, body)
		switch {
		case forge.Gone(err):
			id = 0 // someone deleted it: a new one takes its place
		case err != nil:
			return fmt.Errorf("editing the status comment: %w", err)
		}
	}
	if id == 0 {
		id, err := t.m.cfg.GitHub.Comment(ctx, t.repo, t.issue, body)
		if err != nil {
			return fmt.Errorf("writing the status comment: %w", err)
		}
		t.st[fieldStatus] = strconv.FormatInt(id, 10)
	}
	return t.m.state.Save(ctx, t.run.ID, fieldStatus, t.st[fieldStatus], fieldLatest, t.st[fieldLatest],
		fieldEdited, strconv.FormatInt(now.UnixMilli(), 10))
}

// link is the run's page in the web view, "" when orch has no public address.
func (t *thread) link() string {
	u := strings.TrimSuffix(t.m.cfg.PublicURL, "/")
	if u == "" {
		return ""
	}
	return u + "/runs/" + t.run.ID
}

// replyThreads answers, once each, the review threads the run's tasks took up, now that the run has ended: the
// commit that addresses each, or the agent's answer, or why it was not addressed. A reply is marked as being sent
// before it is: a process that dies between the two leaves the thread without a second answer rather than with two.
// One that GitHub keeps refusing is given up after maxReplyTries passes.
func (t *thread) replyThreads(ctx context.Context) error {
	var tasks []string
	for k := range t.st {
		if id, ok := strings.CutPrefix(k, fieldThread); ok && t.st[fieldReplied+id] == "" {
			tasks = append(tasks, id)
		}
	}
	slices.SortFunc(tasks, byNumber)
	for _, id := range tasks {
		root, _ := strconv.ParseInt(t.st[fieldThread+id], 10, 64)
		task := t.run.Task(id)
		if task == nil || root == 0 {
			continue
		}
		if err := t.m.state.Save(ctx, t.run.ID, fieldReplied+id, "sending"); err != nil {
			return err
		}
		_, err := t.m.cfg.GitHub.Reply(ctx, t.repo, t.issue, root, ThreadReply(t.run, task))
		if err == nil || forge.Gone(err) { // a thread someone deleted takes no answer
			if err := t.m.state.Save(ctx, t.run.ID, fieldReplied+id, "1"); err != nil {
				return err
			}
			continue
		}
		tries, _ := strconv.Atoi(t.st[fieldReplyTries+id])
		if tries+1 >= maxReplyTries {
			t.m.log.Error("github: giving up answering a review thread", "run_id", t.run.ID, "thread", root, "err", err)
			if err := t.m.state.Save(ctx, t.run.ID, fieldReplied+id, "gave up"); err != nil {
				return err
			}
			continue
		}
		if serr := t.m.state.Save(ctx, t.run.ID, fieldReplied+id, "", fieldReplyTries+id, strconv.Itoa(tries+1)); serr != nil {
			return serr
		}
		return fmt.Errorf("answering review thread %d: %w", root, err)
	}
	return nil
}

// byNumber orders task ids as numbers where they are ("2" before "10").
func byNumber(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x - y
	}
	return strings.Compare(a, b)
}
