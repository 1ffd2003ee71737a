package escalation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// Errors of Resolve. Each leaves the run as it was.
var (
	ErrNoOpenEscalation = errors.New("no open escalation")
	ErrAlreadyResolved  = errors.New("already resolved")
	ErrInvalid          = errors.New("invalid resolution")
)

// Request is a human's resolution of a run's open escalation.
type Request struct {
	RunID string
	// EscalationID, when set, must name the open escalation: an answer to a question that was already answered (a
	// second click) is rejected instead of answering the next question.
	EscalationID    string
	Type            jobs.ResolutionType
	Key             string // with choose
	Text            string // with answer
	Reason          string // with abort (required) and force
	AcknowledgeRisk bool   // with force (required)
	By              string // who: a terminal user or a Slack user id
	Via             string // console, cli, slack, answers-file, auto-approve, timeout
}

// Takes reports whether Resolve takes an answer of type t to e. A question whose whole point is that no attempt
// starts until one of its own options is chosen (a budget reached, a provider's limit that has not reset) refuses
// retry, resume and force from every surface, not only on the buttons: each would start that attempt anyway. Other
// questions take every type the command line names, offered on their buttons or not.
func Takes(e *jobs.Escalation, t jobs.ResolutionType) bool {
	if e.Trigger != jobs.TriggerBudget && e.Trigger != jobs.TriggerLimit {
		return true
	}
	return AnswersOf(e).Offers(t)
}

// Enqueuer is what Resolve needs of the queue.
type Enqueuer interface {
	Resume(ctx context.Context, runID, escID string) error
}

// Validate checks a request on its own, before any state is read.
//
// An answer's text may become guidance that is put in every later prompt of the task, so what can never reach an
// agent intact is refused here, while the question is still open and can be answered again, rather than found at the
// next start of the agent, when it would fail every attempt after it: a NUL byte (text has none; the store and every
// command-line argument would not carry it), and bytes that are not UTF-8 (the store keeps text as JSON, which would
// replace them). Control characters, however many and whatever else the text holds, are passed as they are: the
// prompt reaches the agent on its standard input, of any size.
func (q Request) Validate() error {
	if err := checkText(q.Text); err != nil {
		return err
	}
	switch q.Type {
	case jobs.ResolveChoose:
		if strings.TrimSpace(q.Key) == "" {
			return fmt.Errorf("%w: --choose needs an option key", ErrInvalid)
		}
	case jobs.ResolveAnswer:
		if strings.TrimSpace(q.Text) == "" {
			return fmt.Errorf("%w: --answer needs text", ErrInvalid)
		}
	case jobs.ResolveAbort:
		if strings.TrimSpace(q.Reason) == "" {
			return fmt.Errorf("%w: --abort needs --reason", ErrInvalid)
		}
	case jobs.ResolveForce:
		if !q.AcknowledgeRisk {
			return fmt.Errorf("%w: --force-continue needs --acknowledge-risk", ErrInvalid)
		}
	case jobs.ResolveResume, jobs.ResolveRetry:
	default:
		return fmt.Errorf("%w: unknown resolution %q", ErrInvalid, q.Type)
	}
	return nil
}

// checkText refuses an answer that cannot reach an agent as written. The message says where, never echoes the text.
func checkText(s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("%w: the answer holds a NUL byte (at byte %d), which cannot be passed to an agent; "+
			"send it again without it", ErrInvalid, i)
	}
	if !utf8.ValidString(s) {
		i := 0
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("%w: the answer is not UTF-8 text (invalid byte at byte %d); send it again as UTF-8", ErrInvalid, i)
	}
	return nil
}

// Resolve applies a resolution atomically: of any number of concurrent resolutions of the same escalation (terminal,
// Slack click, thread reply, timeout) exactly one wins; the others get ErrAlreadyResolved or ErrNoOpenEscalation and
// change nothing. The winner's effect on the task (guidance, counter reset) is saved with it, and a resume is
// enqueued so that a worker continues the run.
func Resolve(ctx context.Context, store *store.Store, queue Enqueuer, q Request) (*jobs.Run, *jobs.Escalation, error) {
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	if q.By == "" {
		q.By = "unknown"
	}
	var esc *jobs.Escalation
	run, err := store.Update(ctx, q.RunID, func(r *jobs.Run, c *jobs.Change) error {
		esc = nil
		e, err := answered(r, q)
		if err != nil {
			return err
		}
		if !Takes(e, q.Type) {
			return fmt.Errorf("%w: a %s question is answered by its options, words or an abort: %s would start the "+
				"attempt it stopped", ErrInvalid, e.Trigger, q.Type)
		}
		t := r.Task(e.TaskID)
		if t == nil {
			return fmt.Errorf("%w: escalation %s names unknown task %s", ErrInvalid, e.ID, e.TaskID)
		}
		res, err := resolution(r, e, q, store.Now())
		if err != nil {
			return err
		}
		record(r, t, e, res, c)
		esc = e
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// The resolution is saved: even if this enqueue fails, `orch resume` or the next worker start picks it up.
	if err := queue.Resume(ctx, run.ID, esc.ID); err != nil {
		return run, esc, fmt.Errorf("resolution saved, but the run could not be queued to continue (run `orch resume %s`): %w", run.ID, err)
	}
	return run, esc, nil
}

// answered is the escalation of r that request q answers: the one it names, or the open one.
func answered(r *jobs.Run, q Request) (*jobs.Escalation, error) {
	if r.Status.Terminal() {
		return nil, fmt.Errorf("%w: run %s already ended: %s", ErrNoOpenEscalation, r.ID, r.Status)
	}
	e := r.OpenEscalation()
	if q.EscalationID != "" {
		asked := r.Escalation(q.EscalationID)
		if asked == nil {
			return nil, fmt.Errorf("%w: run %s has no escalation %s", ErrInvalid, r.ID, q.EscalationID)
		}
		if asked.Resolution != nil {
			res := asked.Resolution
			return nil, fmt.Errorf("%w: escalation %s of run %s was answered by %s (%s) at %s", ErrAlreadyResolved,
				asked.ID, r.ID, res.By, describe(asked, res), res.At.Format("15:04:05"))
		}
		e = asked
	}
	if e == nil {
		if last := lastOf(r.Escalations); r.Status == jobs.RunParked && last != nil && last.Resolution != nil {
			return nil, fmt.Errorf("%w: run %s: escalation %s was already answered by %s (%s); continue with `orch resume %s`",
				ErrNoOpenEscalation, r.ID, last.ID, last.Resolution.By, describe(last, last.Resolution), r.ID)
		}
		return nil, fmt.Errorf("%w: run %s is %s", ErrNoOpenEscalation, r.ID, r.Status)
	}
	return e, nil
}

// resolution is the resolution request q makes of escalation e of run r at now, checked against what e asks and
// redacted.
func resolution(r *jobs.Run, e *jobs.Escalation, q Request, now time.Time) (*jobs.Resolution, error) {
	res := &jobs.Resolution{Type: q.Type, Key: q.Key, Text: q.Text, Reason: q.Reason, By: q.By, Via: q.Via, At: now.UTC()}
	switch q.Type {
	case jobs.ResolveChoose:
		o, ok := e.OptionByKey(strings.Trim(strings.TrimSpace(q.Key), "[]().:"))
		if !ok {
			return nil, fmt.Errorf("%w: %q is not an option of escalation %s (options: %s)", ErrInvalid, q.Key, e.ID, keys(e))
		}
		res.Key = o.Key
	case jobs.ResolveForce:
		if q.Reason == "" {
			res.Reason = "risk acknowledged"
		}
	}
	if err := conversational(e, res); err != nil {
		return nil, fmt.Errorf("%w: run %s: %v", ErrInvalid, r.ID, err)
	}
	res.Text = safetext.Redact(res.Text)
	res.Reason = safetext.Redact(res.Reason)
	return res, nil
}

// record answers escalation e about task t with res: its effect on the task, its event and audit entries, and the
// end of the run it aborts.
func record(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, res *jobs.Resolution, c *jobs.Change) {
	e.Resolution = res
	apply(r, t, e, res, c)
	c.Emit(jobs.NewEvent(r.ID, t.ID, jobs.ResolutionEvent{EscalationID: e.ID, Resolution: res.Type, Key: res.Key,
		Text: res.Text, Reason: res.Reason, By: res.By, Via: res.Via, WaitSeconds: res.At.Sub(e.CreatedAt).Seconds(),
		Summary: describe(e, res), Trigger: e.Trigger, Question: safetext.Bound(e.Question, 1000), Visit: t.Visits}))
	c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, EscalationID: e.ID, Action: "resolved",
		Trigger: e.Trigger, Resolution: string(res.Type), Detail: describe(e, res), By: res.By, Via: res.Via})
	switch res.Type {
	case jobs.ResolveAbort:
		r.Abort(c, t.ID, res.Reason, res.By, res.At)
	case jobs.ResolveForce:
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, EscalationID: e.ID, Action: "warning",
			Detail: "force-continue: task marked done despite: " + firstLine(e.Error+" "+e.Question), By: res.By, Via: res.Via})
	}
}

// Commands that end an interactive conversation; they are also the chat question's options (buttons in Slack).
const (
	ChatDone    = "/done"
	ChatApprove = "/approve"
	ChatReject  = "/reject"
)

// ChatOptions are the options of an interactive node's question: the commands that end the conversation.
func ChatOptions() []jobs.Option {
	return []jobs.Option{{Key: ChatDone, Label: "Done"}, {Key: ChatApprove, Label: "Approve"}, {Key: ChatReject, Label: "Reject"}}
}

// ChatCommand is the command a chat answer is ("/done", "/approve", "/reject"), or "" for a message to the agent.
// A command may be followed by words ("/reject the migration drops a column"): its reason (ChatReason).
func ChatCommand(res *jobs.Resolution) string {
	cmd, _ := chatCommand(res)
	return cmd
}

// ChatReason is what a person said with a command that ends a conversation: the words after it in a reply, or the
// text given with the command's button; "" for none (or for no command).
func ChatReason(res *jobs.Resolution) string {
	_, reason := chatCommand(res)
	return reason
}

func chatCommand(res *jobs.Resolution) (cmd, reason string) {
	if res.Type == jobs.ResolveChoose {
		cmd, reason = strings.ToLower(res.Key), strings.TrimSpace(res.Text)
	} else {
		text := strings.TrimSpace(res.Text)
		word, rest := text, ""
		if i := strings.IndexAny(text, " \t\n"); i >= 0 {
			word, rest = text[:i], text[i+1:]
		}
		cmd, reason = strings.ToLower(word), strings.TrimSpace(rest)
	}
	switch cmd {
	case ChatDone, ChatApprove, ChatReject:
		return cmd, reason
	}
	return "", ""
}

// conversational checks (and normalises) a resolution of a gate or a chat turn: a gate takes one of its choices —
// an answer that names one by key or label is that choice — and a chat takes a reply, an ending command, one more
// try, or an abort. Resuming or forcing either means nothing.
func conversational(e *jobs.Escalation, res *jobs.Resolution) error {
	switch e.Trigger {
	case jobs.TriggerGate:
		switch res.Type {
		case jobs.ResolveChoose, jobs.ResolveAbort:
			return nil
		case jobs.ResolveAnswer:
			if o, ok := namedOption(e, res.Text); ok {
				res.Type, res.Key, res.Text = jobs.ResolveChoose, o.Key, ""
				return nil
			}
			return fmt.Errorf("%q is not a choice of the gate at %s (choices: %s)", firstLine(res.Text), e.TaskID, keys(e))
		case jobs.ResolveRetry:
			if res.Via == "timeout" {
				return nil // the gate timed out with no default: it is asked again, as its retry policy allows
			}
		}
		return fmt.Errorf("the gate at %s needs one of its choices (%s), or an abort", e.TaskID, keys(e))
	case jobs.TriggerChat:
		switch res.Type {
		case jobs.ResolveChoose, jobs.ResolveAnswer, jobs.ResolveRetry, jobs.ResolveAbort:
			return nil
		}
		return fmt.Errorf("the conversation at %s needs a reply to the agent, or %s, %s or %s to end it", e.TaskID, ChatDone, ChatApprove, ChatReject)
	}
	return nil
}

// namedOption is the option an answer names: by key, by label, or as "K) Label" / "[K] Label", ignoring case.
func namedOption(e *jobs.Escalation, text string) (jobs.Option, bool) {
	a := strings.TrimSpace(text)
	if o, ok := e.OptionByKey(strings.Trim(a, "[]().: ")); ok {
		return o, true
	}
	for _, o := range e.Options {
		for _, form := range []string{o.Label, o.Key + ") " + o.Label, "[" + o.Key + "] " + o.Label} {
			if strings.EqualFold(strings.Join(strings.Fields(form), " "), strings.Join(strings.Fields(a), " ")) {
				return o, true
			}
		}
	}
	return jobs.Option{}, false
}

// apply puts a resolution's effect on the task.
func apply(r *jobs.Run, t *jobs.Task, e *jobs.Escalation, res *jobs.Resolution, c *jobs.Change) {
	if settlePaused(r, t, e, res, c) {
		return
	}
	if e.Trigger.Conversational() && res.Type != jobs.ResolveAbort {
		return // the answer routes the pipeline or continues the conversation: the resume applies it
	}
	switch res.Type {
	case jobs.ResolveChoose, jobs.ResolveAnswer, jobs.ResolveResume:
		if g := GuidanceFor(e, res); g != "" {
			t.Guidance = append(t.Guidance, g)
		}
		if e.Trigger.Counted() {
			// A person looked at the task's trouble: its attempts count afresh. Money and limits are not its trouble.
			t.Failures, t.Errors, t.RetryGuidance = 0, nil, ""
		}
		t.Reopen(c)
	case jobs.ResolveRetry:
		t.Reopen(c)
	case jobs.ResolveForce:
		t.Force(c)
	case jobs.ResolveAbort:
		t.Fail(c)
	}
}

func describe(e *jobs.Escalation, res *jobs.Resolution) string {
	v := Verb(e, res)
	switch {
	case res.Type == jobs.ResolveAnswer && v != "answered" && v != "replied":
		return v // a conversation's end names its command
	case res.Type == jobs.ResolveAnswer:
		return v + ": " + firstLine(res.Text)
	case res.Type == jobs.ResolveAbort, res.Type == jobs.ResolveDecline:
		return v + ": " + firstLine(res.Reason)
	}
	return v
}

// Verb says what a resolution did without the words a person gave with it (their answer, their reason), which a
// surface shows its own way: "chose B) Redis", "answered", "aborted". Every surface says it in these words.
func Verb(e *jobs.Escalation, res *jobs.Resolution) string {
	switch res.Type {
	case jobs.ResolveChoose:
		o, ok := e.OptionByKey(res.Key)
		switch {
		case !ok:
			return "chose " + res.Key
		case e.Trigger == jobs.TriggerChat:
			return "ended the conversation: " + o.Key
		case e.Trigger == jobs.TriggerGate:
			return fmt.Sprintf("chose [%s] %s", o.Key, o.Label)
		}
		return fmt.Sprintf("chose %s) %s", o.Key, o.Label)
	case jobs.ResolveAnswer:
		if e.Trigger != jobs.TriggerChat {
			return "answered"
		}
		if c := ChatCommand(res); c != "" {
			return "ended the conversation: " + c
		}
		return "replied"
	}
	if v, ok := verbs[res.Type]; ok {
		return v
	}
	return string(res.Type)
}

var verbs = map[jobs.ResolutionType]string{
	jobs.ResolveResume:  "resumed",
	jobs.ResolveRetry:   "asked for one more attempt",
	jobs.ResolveAbort:   "aborted",
	jobs.ResolveForce:   "forced the task to continue (risk acknowledged)",
	jobs.ResolveDecline: "declined",
}

// Describe says in a few words what a resolution did.
func Describe(e *jobs.Escalation, res *jobs.Resolution) string { return describe(e, res) }

func lastOf(es []*jobs.Escalation) *jobs.Escalation {
	if len(es) == 0 {
		return nil
	}
	return es[len(es)-1]
}

func keys(e *jobs.Escalation) string {
	if len(e.Options) == 0 {
		return "none; use --answer"
	}
	ks := make([]string, len(e.Options))
	for i, o := range e.Options {
		ks[i] = o.Key
	}
	return strings.Join(ks, ", ")
}

// Decline closes a run's open escalation without a human: the run ends as failed. It is what automation does with a
// question it must not answer (auto-approval never resolves a failure or a security escalation).
func Decline(ctx context.Context, store *store.Store, runID, escID, by, via, reason string) error {
	_, err := store.Update(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		e := r.Escalation(escID)
		if r.Status != jobs.RunParked || e == nil || e.Resolution != nil {
			return fmt.Errorf("%w: run %s is %s", ErrNoOpenEscalation, r.ID, r.Status)
		}
		now := store.Now().UTC()
		e.Resolution = &jobs.Resolution{Type: jobs.ResolveDecline, Reason: reason, By: by, Via: via, At: now}
		if t := r.Task(e.TaskID); t != nil {
			t.Fail(c)
		}
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: e.TaskID, EscalationID: e.ID, Action: "declined",
			Trigger: e.Trigger, Resolution: string(jobs.ResolveDecline), Detail: reason, By: by, Via: via})
		r.Fail(c, e.TaskID, reason, jobs.WorkOf(r), now) // the work on the branch, as every end of a run tells it
		return nil
	})
	return err
}

// Abort stops a run wherever it is: a run waiting on a question is resolved with an abort (first answer wins, as
// always); a queued, running or paused run ends as aborted at once — the step in flight, if any, finds the run gone
// and discards its result.
func Abort(ctx context.Context, store *store.Store, queue Enqueuer, runID, by, via, reason string) (*jobs.Run, error) {
	if strings.TrimSpace(reason) == "" {
		reason = "aborted by " + by
	}
	run, err := store.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	if run.Status == jobs.RunParked && run.OpenEscalation() != nil {
		run, _, err := Resolve(ctx, store, queue, Request{RunID: runID, Type: jobs.ResolveAbort, Reason: reason, By: by, Via: via})
		return run, err
	}
	return store.Update(ctx, runID, func(r *jobs.Run, c *jobs.Change) error {
		if r.Status.Terminal() {
			return fmt.Errorf("%w: run %s already ended: %s", ErrNoOpenEscalation, r.ID, r.Status)
		}
		if r.Status == jobs.RunParked && r.OpenEscalation() != nil {
			return fmt.Errorf("%w: run %s has an open question; try again", ErrAlreadyResolved, r.ID)
		}
		said := safetext.Redact(reason)
		r.Abort(c, currentID(r), said, by, store.Now())
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: currentID(r), Action: "aborted", Detail: said, By: by, Via: via})
		return nil
	})
}

func currentID(r *jobs.Run) string {
	if t := r.Current(); t != nil {
		return t.ID
	}
	return ""
}
