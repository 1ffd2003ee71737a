// Package escalation brings a human into a run: it opens escalations with their context, parks the run, and applies
// the human's resolution exactly once, wherever it comes from.
package escalation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// Spec describes a new escalation.
type Spec struct {
	Trigger        jobs.Trigger
	Name           string // a custom trigger's name
	Priority       int    // 0: the trigger's own (jobs.Trigger.Priority)
	Source         string // agent, brain or orch
	Question       string
	Options        []string // as the agent wrote them; keys are parsed or assigned A, B, C…
	Recommendation string
	Error          string
	Output         string // what the agent said
	Similarity     float64
	Suggestions    []string
	Files          []string // what the task changed in the workspace
	Diff           string   // a summary of those changes (git diff --stat)
	// MaxPerTask stops an escalation loop (0: DefaultMaxPerTask).
	MaxPerTask int
	// Held marks a trigger on an attempt that completed: resuming accepts the work.
	Held bool
	// Keyed are options whose keys are fixed already (a human gate's choices): used as they are, instead of Options.
	Keyed []jobs.Option
	// Default is the option key a timeout takes (a gate's human.default_choice); Timeout the question's own limit.
	Default string
	Timeout time.Duration
	// Call marks a question about a tool call the agent paused at (an approval, Claude's own question): a person is
	// deciding the agent's next step, not rescuing a task in trouble, so it does not count against MaxPerTask.
	Call bool
	// Unclear marks a question about an attempt whose outcome the brain could not tell (Unclear): its options are
	// UnclearOptions, fixed, whatever Options says.
	Unclear bool
	// Stop marks a question about a bound the run reached (trigger budget): which one, and what extending adds.
	Stop *jobs.BudgetStop
}

// DefaultMaxPerTask is how many times a task may need a human before the run ends as failed.
const DefaultMaxPerTask = 5

// Limits that keep an escalation readable and storable.
const (
	maxOptions  = 26
	maxLabel    = 500
	maxOutput   = 16 << 10
	maxError    = 4 << 10
	maxQuestion = 8 << 10
	maxErrors   = 10
	maxFiles    = 200
	maxDiff     = 4 << 10
	// MaxStored bounds one escalation as stored: whatever the agent printed, a question stays readable and cheap.
	MaxStored = 64 << 10
)

// Escalate parks r on the most urgent of the triggers that fired together about task t and queues the others, to be
// asked one at a time, highest priority first. It returns the escalation that is open, or nil when the task hit the
// escalation cap and the run ended as failed instead.
func Escalate(r *jobs.Run, t *jobs.Task, c *jobs.Change, specs []Spec, now time.Time) *jobs.Escalation {
	if len(specs) == 0 {
		return nil
	}
	for i := range specs {
		if specs[i].Priority == 0 {
			specs[i].Priority = specs[i].Trigger.Priority()
		}
	}
	sort.SliceStable(specs, func(i, j int) bool { return specs[i].Priority > specs[j].Priority })
	e := Open(r, t, c, specs[0], now)
	if e == nil {
		return nil
	}
	for _, s := range specs[1:] {
		q := build(r, t, s, now)
		if !duplicate(r, q) {
			r.Queued = append(r.Queued, q)
		}
	}
	return e
}

// Next opens the next queued trigger about task t, if there is one: the run stays parked on it.
func Next(r *jobs.Run, t *jobs.Task, c *jobs.Change, now time.Time) *jobs.Escalation {
	for i, q := range r.Queued {
		if q.TaskID != t.ID {
			continue
		}
		r.Queued = append(r.Queued[:i:i], r.Queued[i+1:]...)
		q.CreatedAt = now.UTC()
		return park(r, t, c, q)
	}
	return nil
}

// DropQueued forgets the queued triggers about task t (the task was forced or the run ended).
func DropQueued(r *jobs.Run, taskID string) {
	keep := r.Queued[:0]
	for _, q := range r.Queued {
		if q.TaskID != taskID {
			keep = append(keep, q)
		}
	}
	r.Queued = keep
}

// duplicate reports whether the same trigger is already open or queued for the task.
func duplicate(r *jobs.Run, e *jobs.Escalation) bool {
	if o := r.OpenEscalation(); o != nil && o.TaskID == e.TaskID && o.Trigger == e.Trigger && o.Name == e.Name {
		return true
	}
	for _, q := range r.Queued {
		if q.TaskID == e.TaskID && q.Trigger == e.Trigger && q.Name == e.Name {
			return true
		}
	}
	return false
}

// Open parks r on a new escalation about task t and records it in the change: the run holds no worker from here on.
// When an escalation is already open for the task, the duplicate trigger collapses into it and Open returns it.
// A task that already needed a human MaxPerTask times is in an escalation loop: the run ends as failed and Open
// returns nil.
func Open(r *jobs.Run, t *jobs.Task, c *jobs.Change, s Spec, now time.Time) *jobs.Escalation {
	if e := r.OpenEscalation(); e != nil && e.TaskID == t.ID {
		return e
	}
	if s.Priority == 0 {
		s.Priority = s.Trigger.Priority()
	}
	limit := s.MaxPerTask
	if limit <= 0 {
		limit = DefaultMaxPerTask
	}
	n := 0
	for _, e := range r.Escalations {
		if e.TaskID == t.ID && e.Trigger.Counted() && !e.Call {
			n++
		}
	}
	if n >= limit && s.Trigger.Counted() && !s.Call {
		reason := fmt.Sprintf("escalation loop: task %s needed a human %d times (limit %d); the last trigger was %s",
			t.ID, n, limit, s.Trigger)
		t.Fail(c)
		DropQueued(r, t.ID)
		r.Fail(c, t.ID, reason, jobs.WorkOf(r), now) // the work on the branch, as every end of a run tells it
		c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, Action: "stopped", Trigger: s.Trigger,
			Detail: reason, By: "orch", Via: "escalation cap"})
		return nil
	}
	return park(r, t, c, build(r, t, s, now))
}

// build makes the escalation record of a spec: redacted, bounded, with its context.
func build(r *jobs.Run, t *jobs.Task, s Spec, now time.Time) *jobs.Escalation {
	opts := Options(s.Options)
	if len(s.Keyed) > 0 {
		opts = make([]jobs.Option, len(s.Keyed))
		for i, o := range s.Keyed {
			opts[i] = jobs.Option{Key: o.Key, Label: safetext.Bound(safetext.Redact(o.Label), maxLabel)}
		}
	}
	e := &jobs.Escalation{
		TaskID:         t.ID,
		Trigger:        s.Trigger,
		Name:           s.Name,
		Priority:       s.Priority,
		Source:         s.Source,
		Question:       safetext.Bound(safetext.Redact(strings.TrimSpace(s.Question)), maxQuestion),
		Options:        opts,
		Recommendation: recommendationKey(opts, safetext.Bound(safetext.Redact(s.Recommendation), maxLabel)),
		Attempt:        t.Started,
		Failures:       t.Failures,
		Similarity:     s.Similarity,
		Error:          safetext.Bound(safetext.Redact(s.Error), maxError),
		Output:         safetext.Bound(safetext.Redact(s.Output), maxOutput),
		Suggestions:    s.Suggestions,
		TaskStatus:     string(t.Status),
		Held:           s.Held,
		Diff:           safetext.Bound(safetext.Redact(s.Diff), maxDiff),
		Default:        s.Default,
		Timeout:        s.Timeout,
		Call:           s.Call,
		Unclear:        s.Unclear,
		Stop:           s.Stop,
		CreatedAt:      now.UTC(),
	}
	for i, f := range s.Files {
		if i == maxFiles {
			e.Files = append(e.Files, fmt.Sprintf("… and %d more", len(s.Files)-maxFiles))
			break
		}
		e.Files = append(e.Files, safetext.Bound(safetext.Redact(f), maxLabel))
	}
	if s.Priority == 0 {
		e.Priority = s.Trigger.Priority()
	}
	for _, err := range lastN(t.Errors, maxErrors) {
		e.Errors = append(e.Errors, safetext.Bound(safetext.Redact(err), maxError))
	}
	if e.Question == "" {
		e.Question = fmt.Sprintf("Task %s needs a decision. Please review and advise.", t.ID)
	}
	if len(e.Suggestions) == 0 {
		e.Suggestions = suggestions(e, r.ID)
	}
	fit(e)
	return e
}

// fit keeps an escalation within MaxStored, giving up what matters least first: the agent's raw output, then older
// errors, then the diff.
func fit(e *jobs.Escalation) {
	size := func() int { data, _ := json.Marshal(e); return len(data) }
	for over := size() - MaxStored; over > 0; over = size() - MaxStored {
		switch {
		case len(e.Output) > 1024:
			e.Output = safetext.Bound(e.Output, max(1024, len(e.Output)-over-64))
		case len(e.Errors) > 1:
			e.Errors = e.Errors[1:]
		case len(e.Diff) > 256:
			e.Diff = safetext.Bound(e.Diff, 256)
		case len(e.Files) > 10:
			e.Files = e.Files[:10]
		default:
			e.Question = safetext.Bound(e.Question, max(256, len(e.Question)-over-64))
			return
		}
	}
}

// park opens e: the run waits for a human from here on.
func park(r *jobs.Run, t *jobs.Task, c *jobs.Change, e *jobs.Escalation) *jobs.Escalation {
	e.ID = "e" + strconv.Itoa(len(r.Escalations)+1)
	r.Park(c, t, e)
	c.Audit = append(c.Audit, jobs.AuditEntry{TaskID: t.ID, EscalationID: e.ID, Action: "escalated",
		Trigger: e.Trigger, Detail: firstLine(e.Question), By: "orch", Via: e.Source})
	return e
}

// Options turns the options an agent wrote into keyed options. "A) Redis", "[A] Redis", "A. Redis" and "A - Redis"
// keep their key; anything else gets the next letter.
// At most 26 options are kept (one per letter): a human cannot weigh more, and buttons run out.
func Options(raw []string) []jobs.Option {
	out := make([]jobs.Option, 0, min(len(raw), maxOptions))
	used := map[string]bool{}
	for _, s := range raw {
		if len(out) == maxOptions {
			break
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		key, label := splitKey(s)
		if key == "" || used[strings.ToUpper(key)] {
			key = nextKey(used, len(out))
			label = s
		}
		used[strings.ToUpper(key)] = true
		out = append(out, jobs.Option{Key: strings.ToUpper(key), Label: safetext.Bound(safetext.Redact(label), maxLabel)})
	}
	return out
}

func splitKey(s string) (key, label string) {
	if len(s) >= 3 && s[0] == '[' {
		if end := strings.IndexByte(s, ']'); end > 1 && end <= 4 {
			return s[1:end], strings.TrimSpace(s[end+1:])
		}
	}
	for i, r := range s {
		if i > 2 {
			break
		}
		if (r == ')' || r == '.' || r == ':') && i > 0 && isKey(s[:i]) {
			return s[:i], strings.TrimSpace(s[i+1:])
		}
	}
	if k, l, ok := strings.Cut(s, " - "); ok && isKey(k) {
		return k, strings.TrimSpace(l)
	}
	return "", s
}

func isKey(s string) bool {
	if s == "" || len(s) > 2 {
		return false
	}
	for _, r := range s {
		if !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// nextKey returns the first free letter from the i-th on; with all 26 taken (keys the agent chose, like "1" or "AA",
// do not count against letters) it falls back to a number.
func nextKey(used map[string]bool, i int) string {
	for n := range 26 {
		c := string(rune('A' + (i+n)%26))
		if !used[c] {
			return c
		}
	}
	for n := 1; ; n++ {
		if k := strconv.Itoa(n); !used[k] {
			return k
		}
	}
}

// recommendationKey returns the key of the option a recommendation names ("B", "B for simplicity", "B) In-memory",
// or the option's label), else the recommendation as written.
func recommendationKey(opts []jobs.Option, rec string) string {
	rec = strings.TrimSpace(rec)
	if rec == "" {
		return ""
	}
	plain := strings.TrimSpace(strings.Trim(rec, "*_`"))
	for _, o := range opts {
		if strings.EqualFold(rec, o.Key) || strings.EqualFold(rec, o.Label) {
			return o.Key
		}
	}
	// "B) In-memory", "[B]", "b, because…": a key set off by punctuation at the start, in any case.
	if m := leadingKey.FindStringSubmatch(plain); m != nil {
		for _, o := range opts {
			if strings.EqualFold(m[1], o.Key) {
				return o.Key
			}
		}
	}
	// "B for simplicity": a short phrase that starts with the key. In a longer sentence a leading "A" is more
	// likely an article ("A good choice is B"), so there only a key standing last counts.
	words := strings.Fields(plain)
	if len(words) == 0 {
		return rec
	}
	candidates := []string{strings.Trim(words[len(words)-1], ".!")}
	if len(words) <= 4 {
		candidates = append([]string{words[0]}, candidates...)
	}
	for _, w := range candidates {
		for _, o := range opts {
			if w == o.Key {
				return o.Key
			}
		}
	}
	return rec
}

var leadingKey = regexp.MustCompile(`^[\[(]?([A-Za-z0-9]{1,2})(?:[\])]|[.:,]|\s+-\s|\s*$)`)

// GuidanceFor turns a resolution into the guidance the next attempt gets ("" for none).
func GuidanceFor(e *jobs.Escalation, res *jobs.Resolution) string {
	if (e.Unclear || e.Stop != nil || e.Trigger == jobs.TriggerLimit) && res.Type == jobs.ResolveChoose {
		// Accepted or run again as it was, a budget extended or a limit waited out: the choice tells the agent nothing.
		return ""
	}
	switch res.Type {
	case jobs.ResolveChoose:
		if o, ok := e.OptionByKey(res.Key); ok {
			return fmt.Sprintf("The human chose option %s: %s", o.Key, o.Label)
		}
		return "The human chose option " + res.Key
	case jobs.ResolveAnswer:
		return res.Text
	}
	return ""
}

func suggestions(e *jobs.Escalation, id string) []string {
	var s []string
	switch e.Trigger {
	case jobs.TriggerNeedsHelp, jobs.TriggerBrain:
		if len(e.Options) > 0 {
			s = append(s, fmt.Sprintf("pick an option: orch escalation resolve %s --choose KEY", id))
		}
		s = append(s, fmt.Sprintf("answer in your own words: orch escalation resolve %s --answer \"…\"", id))
	case jobs.TriggerAttemptCap, jobs.TriggerPermanent:
		s = append(s, "read the errors above; fix what the agent cannot (credentials, permissions, missing files) and --resume",
			"or give the agent a different approach with --answer \"…\"")
	case jobs.TriggerSecurity:
		s = append(s, "rotate the exposed credential before anything else", "then --abort, or --force-continue --acknowledge-risk")
	case jobs.TriggerGate:
		s = append(s, fmt.Sprintf("choose the way on: orch escalation resolve %s --choose KEY", id))
	case jobs.TriggerChat:
		s = append(s, fmt.Sprintf("reply to the agent: orch escalation resolve %s --answer \"…\"", id),
			fmt.Sprintf("end the conversation: orch escalation resolve %s --answer /done (or /approve, /reject)", id))
	case jobs.TriggerLoop:
		s = append(s, "look at why the pipeline keeps coming back here; --resume lets it go on, --answer \"…\" gives the stage guidance")
	default:
		s = append(s, "fix the cause and --resume, or --abort --reason \"…\"")
	}
	return s
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 200 {
		line = safetext.Cut(line, 200) + "…"
	}
	return line
}
