package mirror

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

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// recentEvents is how many recent events the progress view reads; it shows the last of those people care about.
const recentEvents = 40

// The fields of a run's state (store.Mirror.State): the channel, the ts of the root, progress and final messages, the
// id of the last event handled, "1" once the thread is finished, and "esc:<id>" the ts of escalation id's message.
const (
	fieldChannel    = "channel"
	fieldRootTS     = "root_ts"
	fieldProgressTS = "progress_ts"
	fieldCursor     = "cursor"
	fieldFinal      = "final"
	fieldFinalTS    = "final_ts"
	fieldEscPrefix  = "esc:"
	// fieldPointerTS is the ts of the message that points from where a run was asked for to the run's thread.
	fieldPointerTS = "pointer_ts"
	// fieldNudgePrefix + escalation id: how many times the question was nudged.
	fieldNudgePrefix = "nudge:"
)

// threadKey is a thread's name in the store's thread index.
func threadKey(channel, threadTS string) string { return channel + ":" + threadTS }

// poster keeps each Slack run's thread up to date from the run's event log: the root message, a progress message
// updated in place, a message per question (updated when answered, from wherever), and the final message. It posts
// an event's messages before it moves past the event, so a Slack outage delays messages but loses none, and a
// thread's messages stay in order.
type poster struct {
	cfg     Config
	log     *slog.Logger
	api     *slack.Client
	records *store.Mirror // what the poster knows of each run's messages, and the runs it follows
	homes   *homes        // the Home tabs an event changes
	pace    *pacer        // per channel: Slack allows about one message a second
	ws      *workspace    // for links to messages

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newPoster(cfg Config, records *store.Mirror, homes *homes, pace *pacer, ws *workspace) *poster {
	return &poster{cfg: cfg, log: cfg.Log, api: cfg.Slack, records: records, homes: homes, pace: pace, ws: ws,
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (p *poster) start() {
	go p.loop()
}

// shutdown stops the loop after the pass in progress.
func (p *poster) shutdown() {
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
}

func (p *poster) loop() {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-p.stop; cancel() }()
	p.adopt(ctx)
	t := time.NewTicker(p.cfg.PollInterval)
	defer t.Stop()
	for {
		p.pass(ctx)
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// adopt follows the Slack runs that have not reached their final message: after a restart nothing is forgotten.
func (p *poster) adopt(ctx context.Context) {
	runs, err := p.cfg.Store.List(ctx, 500)
	if err != nil {
		p.log.Warn("looking for Slack runs to follow", "err", err)
		return
	}
	for _, r := range runs {
		if r.Origin.Kind != "slack" {
			continue
		}
		st, err := p.records.State(ctx, r.ID)
		if err == nil && st[fieldFinal] == "" {
			err = p.records.Follow(ctx, r.ID)
		}
		if err != nil {
			p.log.Warn("looking for Slack runs to follow", "err", err)
			return
		}
	}
}

// syncWorkers is how many runs' threads a pass brings up to date at once. Their calls to Slack wait in their
// channels' lines (pacer), so that a channel's questions and ends go first: a run whose turn has not come does not
// keep the runs of other channels waiting, nor the other runs of its own channel from their place in the line.
const syncWorkers = 16

// pass brings every followed run's thread up to date.
func (p *poster) pass(ctx context.Context) {
	ids, err := p.records.Followed(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("listing followed runs", "err", err)
		}
		return
	}
	defer p.pace.pass()() // runs after wg.Wait: the pass is over once every sync is
	var wg sync.WaitGroup
	workers := make(chan struct{}, syncWorkers)
	defer wg.Wait()
	for _, id := range ids {
		select {
		case <-ctx.Done():
			return
		case workers <- struct{}{}:
		}
		wg.Go(func() {
			defer func() { <-workers }()
			if err := p.sync(ctx, id); err != nil && ctx.Err() == nil {
				p.log.Warn("updating a run's Slack thread; will try again", "run_id", id, "err", err)
			}
		})
	}
}

// runState is what the poster knows of a run's messages.
type runState struct {
	Channel, RootTS, ProgressTS, FinalTS, Cursor, PointerTS string
	Esc                                                     map[string]string // escalation id → message ts
	Nudges                                                  map[string]int    // escalation id → nudges sent
}

func (p *poster) state(ctx context.Context, runID string) (runState, error) {
	m, err := p.records.State(ctx, runID)
	if err != nil {
		return runState{}, err
	}
	st := runState{Channel: m[fieldChannel], RootTS: m[fieldRootTS], ProgressTS: m[fieldProgressTS],
		FinalTS: m[fieldFinalTS], Cursor: m[fieldCursor], PointerTS: m[fieldPointerTS], Esc: map[string]string{},
		Nudges: map[string]int{}}
	for k, v := range m {
		if id, ok := strings.CutPrefix(k, fieldEscPrefix); ok && id != "" {
			st.Esc[id] = v
		}
		if id, ok := strings.CutPrefix(k, fieldNudgePrefix); ok && id != "" {
			st.Nudges[id], _ = strconv.Atoi(v)
		}
	}
	return st, nil
}

func (p *poster) save(ctx context.Context, runID string, fieldValues ...string) error {
	return p.records.Save(ctx, runID, fieldValues...)
}

// sync posts what a run's thread is missing, event by event.
func (p *poster) sync(ctx context.Context, runID string) error {
	// One poster per run at a time, however many bots run. The lock holds a token of this sync, is released only by
	// it, and outlives the sync: the sync gives up before the lock could expire under it.
	release, ok, err := p.records.TryLock(ctx, runID, LockTTL)
	if err != nil || !ok {
		return err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, LockTTL-10*time.Second)
	defer cancel()

	st, err := p.state(ctx, runID)
	if err != nil {
		return err
	}
	// Events first, then the run: a run and its events are written together, so the run read after the events is at
	// least as new as every event read (the other order could miss the answer an event speaks of).
	events, err := p.cfg.Store.Events(ctx, runID, st.Cursor, 0)
	if err != nil {
		return err
	}
	run, err := p.cfg.Store.Get(ctx, runID)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return p.records.Unfollow(ctx, runID)
	}
	if err != nil {
		return err
	}
	if st.Channel == "" {
		st.Channel = run.Origin.Channel
	}
	if st.Channel == "" {
		return p.records.Unfollow(ctx, runID) // nowhere to post
	}
	if stop, err := p.fixtures(ctx, run, &st); stop {
		return err
	}
	return p.catchUp(ctx, run, &st, events)
}

// fixtures brings up to date what a thread has whatever its events: the root message (stop: a run whose channel takes
// no message from the bot ends there, or the root could not be posted), the pointer from where the run was asked
// for, and the nudge of a question left waiting.
func (p *poster) fixtures(ctx context.Context, run *jobs.Run, st *runState) (stop bool, err error) {
	if err := p.root(ctx, run, st); err != nil {
		if code, ok := unpostable(err); ok {
			return true, p.cannotPost(ctx, run, st.Channel, code)
		}
		return true, err
	}
	if err := p.pointer(ctx, run, st); err != nil {
		return true, err
	}
	if err := p.nudge(ctx, run, st); err != nil {
		p.log.Warn("nudging about a question", "run_id", run.ID, "err", err)
	}
	return false, nil
}

// catchUp posts the thread's messages of events, in order, saving the cursor past each; the progress message then
// shows those that have no message of their own.
func (p *poster) catchUp(ctx context.Context, run *jobs.Run, st *runState, events []jobs.Event) error {
	if len(events) == 0 {
		return nil
	}
	t := &thread{p: p, run: run, st: st}
	defer func() {
		if t.progress {
			if err := p.progress(ctx, run, st); err != nil {
				p.log.Warn("updating the progress message", "run_id", run.ID, "err", err)
			}
		}
	}()
	for _, ev := range events {
		p.homes.event(run, ev) // the Home tabs it changes are refreshed off this path
		if err := runs.Present(ctx, t, ev); err != nil {
			return err
		}
		st.Cursor = ev.ID
		if err := p.save(ctx, run.ID, fieldCursor, ev.ID); err != nil {
			return err
		}
	}
	return nil
}

// root posts the run's root message in the channel, once, and remembers its thread.
func (p *poster) root(ctx context.Context, run *jobs.Run, st *runState) error {
	if st.RootTS != "" {
		return nil
	}
	ts, err := p.post(ctx, st.Channel, "", p.rootMessage(run))
	if err != nil {
		return fmt.Errorf("posting the root message: %w", err)
	}
	st.RootTS = ts
	if err := p.save(ctx, run.ID, fieldChannel, st.Channel, fieldRootTS, ts); err != nil {
		return err
	}
	return p.records.SetThread(ctx, threadKey(st.Channel, ts), run.ID)
}

// unpostable reports whether err says the bot can never post in the channel (chat.postMessage's errors for a channel
// it is not in, that does not exist for it, or that is archived), and Slack's code for it.
func unpostable(err error) (string, bool) {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return "", false
	}
	switch se.Err {
	case "not_in_channel", "channel_not_found", "is_archived":
		return se.Err, true
	}
	return "", false
}

// cannotPost ends a run that can have no thread: nobody would see it or could answer its questions, while its agent
// spends. The run is aborted with the reason, whoever asked for it is told by direct message, and the poster stops
// following it.
func (p *poster) cannotPost(ctx context.Context, run *jobs.Run, channel, code string) error {
	reason := fmt.Sprintf("orch cannot post in channel %s (%s): invite the bot there (/invite @orch), or ask in a channel it is in", channel, code)
	p.log.Error("a run's channel takes no message from the bot; aborting the run", "run_id", run.ID, "channel", channel, "err", code)
	if _, err := escalation.Abort(ctx, p.cfg.Store, p.cfg.Queue, run.ID, "orch", "slack", reason); err != nil &&
		!errors.Is(err, escalation.ErrNoOpenEscalation) {
		return fmt.Errorf("aborting run %s, which cannot be posted: %w", run.ID, err)
	}
	if o := run.Origin; o.Kind == "slack" && blocks.IsUserID(o.User) {
		if _, err := p.post(ctx, o.User, "", blocks.StoppedMessage(run, reason)); err != nil {
			p.log.Warn("telling a requester their run was stopped", "run_id", run.ID, "err", err)
		}
	}
	if err := p.save(ctx, run.ID, fieldFinal, "1"); err != nil {
		return err
	}
	return p.records.Unfollow(ctx, run.ID)
}

// rootMessage is the run's root message, with a link to the conversation it was asked in when it was asked in one.
func (p *poster) rootMessage(run *jobs.Run) blocks.Message {
	askedIn := ""
	if o := run.Origin; o.ThreadTS != "" {
		askedIn = p.ws.link(o.Channel, o.ThreadTS)
	}
	return blocks.RootMessage(run, askedIn)
}

// pointer posts, once, where a run was asked for in a thread (a conversation, or the thread of the run it follows
// up), a message that leads to the run's own thread. A follow-up is linked both ways first: the run it follows lists
// it, and that run's root message says so.
func (p *poster) pointer(ctx context.Context, run *jobs.Run, st *runState) error {
	o := run.Origin
	if o.ThreadTS == "" || st.PointerTS != "" || o.Channel == "" {
		return nil
	}
	if run.FollowUpOf != "" {
		if err := p.linkFollowUp(ctx, run); err != nil {
			return err
		}
	}
	ts, err := p.post(ctx, o.Channel, o.ThreadTS, blocks.PointerMessage(run, p.ws.link(st.Channel, st.RootTS)))
	if err != nil {
		return fmt.Errorf("posting where run %s went: %w", run.ID, err)
	}
	st.PointerTS = ts
	return p.save(ctx, run.ID, fieldPointerTS, ts)
}

// linkFollowUp records run on the run it follows up, and shows it on that run's root message.
func (p *poster) linkFollowUp(ctx context.Context, run *jobs.Run) error {
	parent, err := p.cfg.Store.Update(ctx, run.FollowUpOf, func(r *jobs.Run, c *jobs.Change) error {
		if !slices.Contains(r.FollowUps, run.ID) {
			r.FollowUps = append(r.FollowUps, run.ID)
		}
		return nil
	})
	if errors.Is(err, jobs.ErrRunNotFound) {
		return nil // pruned from history meanwhile: nothing to link
	}
	if err != nil {
		return fmt.Errorf("linking follow-up %s to run %s: %w", run.ID, run.FollowUpOf, err)
	}
	pst, err := p.state(ctx, parent.ID)
	if err == nil && pst.Channel != "" && pst.RootTS != "" {
		err = p.update(ctx, pst.Channel, pst.RootTS, p.rootMessage(parent))
	}
	if err != nil {
		p.log.Warn("showing a follow-up on its run's root message", "run_id", parent.ID, "err", err)
	}
	return nil
}

// thread is one pass over a run's new events, as the surface its Slack thread is (runs.Surface): a question, its
// answer, a pause and the end have messages of their own; every other event is shown by the progress message.
type thread struct {
	p        *poster
	run      *jobs.Run
	st       *runState
	progress bool // an event only the progress message shows came
}

var _ runs.Surface = (*thread)(nil)

// Progress leaves the event to the progress message, updated once after the pass.
func (t *thread) Progress(context.Context, jobs.Event) error {
	t.progress = true
	return nil
}

// Ask posts the question's message.
func (t *thread) Ask(ctx context.Context, _ jobs.Event, q jobs.EscalationEvent) error {
	return t.p.question(ctx, t.run, t.st, q.EscalationID)
}

// Answered updates the question's message to say who answered, from where and what.
func (t *thread) Answered(ctx context.Context, _ jobs.Event, a jobs.ResolutionEvent) error {
	e := t.run.Escalation(a.EscalationID)
	if e == nil || e.Resolution == nil || t.st.Esc[e.ID] == "" {
		return nil
	}
	if err := t.p.update(ctx, t.st.Channel, t.st.Esc[e.ID], blocks.AnsweredMessage(t.run, e)); err != nil {
		return fmt.Errorf("marking escalation %s answered: %w", e.ID, err)
	}
	return nil
}

// Paused posts why the run stopped and how to continue it; the root message says it is paused when the channel has a
// turn for it.
func (t *thread) Paused(ctx context.Context, _ jobs.Event) error {
	if _, err := t.p.post(ctx, t.st.Channel, t.st.RootTS, blocks.PausedMessage(t.run)); err != nil {
		return err
	}
	t.p.refreshRoot(t.run.ID, t.st.Channel, t.st.RootTS)
	return nil
}

// Ended posts the final message and stops following the run.
func (t *thread) Ended(ctx context.Context, _ jobs.Event) error { return t.p.final(ctx, t.run, t.st) }

// question posts an escalation's message in the thread (once) and shows on the root message that the run waits.
func (p *poster) question(ctx context.Context, run *jobs.Run, st *runState, id string) error {
	if e := run.Escalation(id); e != nil && st.Esc[id] == "" {
		ts, err := p.post(ctx, st.Channel, st.RootTS, blocks.EscalationMessage(run, e, runPage(p.cfg.PublicURL, run.ID)))
		if err != nil {
			return fmt.Errorf("posting escalation %s: %w", id, err)
		}
		st.Esc[id] = ts
		if err := p.save(ctx, run.ID, fieldEscPrefix+id, ts); err != nil {
			return err
		}
	}
	return p.update(ctx, st.Channel, st.RootTS, p.rootMessage(run))
}

// final posts the run's final message (once), updates the root message with the final status, and stops following.
func (p *poster) final(ctx context.Context, run *jobs.Run, st *runState) error {
	if st.FinalTS == "" {
		ts, err := p.post(ctx, st.Channel, st.RootTS, blocks.FinalMessage(run))
		if err != nil {
			return fmt.Errorf("posting the final message: %w", err)
		}
		// Saved at once: a failure below must not post it again on the next pass.
		if err := p.save(ctx, run.ID, fieldFinalTS, ts); err != nil {
			return err
		}
		st.FinalTS = ts
	}
	if err := p.update(ctx, st.Channel, st.RootTS, p.rootMessage(run)); err != nil {
		return err
	}
	if err := p.save(ctx, run.ID, fieldFinal, "1"); err != nil {
		return err
	}
	return p.records.Unfollow(ctx, run.ID)
}

// progress posts or updates the progress message: one update however many events came, so a busy run does not
// flood the thread. The first progress message is a post in the thread, made at once, so that it keeps its place
// (before the question or the end that follows it); its updates are left to the channel's pace, which sends each
// progress message's latest state when nothing more important waits. The progress message shows the events alone:
// what the run does now, its tasks and its cost are the root message's, brought up to date the same way.
func (p *poster) progress(ctx context.Context, run *jobs.Run, st *runState) error {
	p.refreshRoot(run.ID, st.Channel, st.RootTS)
	if st.ProgressTS != "" {
		runID, channel, ts := run.ID, st.Channel, st.ProgressTS
		p.pace.progress(channel, ts, func(ctx context.Context) error { return p.sendProgress(ctx, runID, channel, ts) })
		return nil
	}
	recent, err := p.cfg.Store.Recent(ctx, run.ID, recentEvents)
	if err != nil {
		return err
	}
	ts, err := p.post(ctx, st.Channel, st.RootTS, blocks.ProgressMessage(run, recent))
	if err != nil {
		return err
	}
	st.ProgressTS = ts
	return p.save(ctx, run.ID, fieldProgressTS, ts)
}

// refreshRoot has the channel's pace bring a run's root message (rootTS in channel) up to date as a progress update
// is: in a turn nothing more important wants, in the run's state at that moment, once however often the run moved.
func (p *poster) refreshRoot(runID, channel, rootTS string) {
	if rootTS == "" {
		return
	}
	p.pace.progress(channel, rootTS, func(ctx context.Context) error { return p.sendRoot(ctx, runID, channel, rootTS) })
}

// sendRoot updates a run's root message (ts in channel) to show the run as it is now. It runs in the channel's turn
// (pacer), so it calls Slack directly.
func (p *poster) sendRoot(ctx context.Context, runID, channel, ts string) error {
	return p.sendAsNow(ctx, runID, channel, ts, func(ctx context.Context, run *jobs.Run) (blocks.Message, error) {
		return p.rootMessage(run), nil
	})
}

// sendProgress updates a run's progress message (ts in channel) to show the run as it is now. It runs in the channel's
// turn (pacer), so it calls Slack directly.
func (p *poster) sendProgress(ctx context.Context, runID, channel, ts string) error {
	return p.sendAsNow(ctx, runID, channel, ts, func(ctx context.Context, run *jobs.Run) (blocks.Message, error) {
		recent, err := p.cfg.Store.Recent(ctx, runID, recentEvents)
		if err != nil {
			return blocks.Message{}, err
		}
		return blocks.ProgressMessage(run, recent), nil
	})
}

// sendAsNow reads the run and updates message ts in channel to what render makes of it; a run pruned meanwhile is
// nothing to show.
func (p *poster) sendAsNow(ctx context.Context, runID, channel, ts string,
	render func(context.Context, *jobs.Run) (blocks.Message, error)) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	run, err := p.cfg.Store.Get(ctx, runID)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := render(ctx, run)
	if err != nil {
		return err
	}
	_, _, _, err = p.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
	return err
}

// post sends a message (in a thread when threadTS is set) and returns its ts.
func (p *poster) post(ctx context.Context, channel, threadTS string, m blocks.Message) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	var ts string
	err := p.pace.call(ctx, channel, func(ctx context.Context) error {
		var err error
		_, ts, err = p.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

// update replaces a message in place.
func (p *poster) update(ctx context.Context, channel, ts string, m blocks.Message) error {
	return p.pace.call(ctx, channel, func(ctx context.Context) error {
		_, _, _, err := p.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
		return err
	})
}
