package escalation

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// QuestionType is the kind of answer a question wants.
type QuestionType string

const (
	YesNo          QuestionType = "YES_NO"
	MultipleChoice QuestionType = "MULTIPLE_CHOICE"
	Freeform       QuestionType = "FREEFORM"
	Confirmation   QuestionType = "CONFIRMATION"
)

// Answer values that are not an option or text.
const (
	AnswerYes     = "YES"
	AnswerNo      = "NO"
	AnswerSkipped = "SKIPPED" // nobody answered (a script ran out, stdin closed)
	AnswerTimeout = "TIMEOUT" // the question's time ran out; never a denial
	// AnswerDeclined is automation refusing to answer a question it must not (Text says why): the run ends as failed.
	AnswerDeclined = "DECLINED"
	// AnswerNoDefault is "skip" where there is nothing to skip to: no default option and no recommendation. Text says
	// what can be answered instead; a console asks again, a script's answer parks the run.
	AnswerNoDefault = "NO_DEFAULT"
)

// noDefault is what "skip" is told when the question recommends nothing. Resuming with a reset attempt count would
// silently restart the loop that stopped, so nothing is taken for the person.
const noDefault = "there is no recommendation to take with 'skip': answer with an option key, guidance (free text), " +
	"/retry (one more attempt, the failure count kept), /resume (continue with the failure count reset) or /abort REASON"

// Question is what an interviewer asks a human.
type Question struct {
	Text    string
	Type    QuestionType
	Options []jobs.Option
	// Default is the option key taken for "skip" and by auto-approval; "" for none.
	Default string
	Timeout time.Duration // 0 = wait forever
	Stage   string        // the task or node the question is about
	// Escalation is the escalation the question stands for, when it does, and RunID the run it belongs to.
	Escalation *jobs.Escalation
	RunID      string
	// Prompt is what a console prints before reading the answer ("" for the default Prompt).
	Prompt string
}

// Answer is a human's reply.
type Answer struct {
	// Value is an option key, YES/NO, SKIPPED, TIMEOUT, a command ("/abort", "/retry", "/resume"), or "" for text.
	Value    string
	Selected *jobs.Option
	Text     string
}

// Interviewer asks humans questions. Ask returns the answer, an answer with Value SKIPPED when nobody can answer
// here, or ctx's error when the question was settled elsewhere first.
type Interviewer interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// QuestionFor turns an escalation into a question.
func QuestionFor(e *jobs.Escalation) Question {
	q := Question{Text: e.Question, Type: Freeform, Options: e.Options, Stage: e.TaskID, Escalation: e}
	if len(e.Options) > 0 {
		q.Type = MultipleChoice
		if _, ok := e.OptionByKey(e.Recommendation); ok {
			q.Default = e.Recommendation
		}
	}
	switch e.Trigger {
	case jobs.TriggerGate:
		// Auto-approval takes a gate's first choice (attractor spec §6.4); its default choice is for timeouts.
		q.Prompt, q.Default = GatePrompt, ""
	case jobs.TriggerChat:
		// Auto-approval ends a conversation at once (/done, the first option) rather than talk to the agent.
		q.Prompt = ChatPrompt
	}
	return q
}

// ParseAnswer reads a typed line: an option key ("B", "b", "B)"), "skip" for the default, "/abort REASON",
// "/retry", "/resume", or free text taken as guidance.
func ParseAnswer(q Question, line string) Answer {
	s := strings.TrimSpace(line)
	lower := strings.ToLower(s)
	switch {
	case lower == "skip":
		if o, ok := optionByKey(q.Options, q.Default); ok {
			return Answer{Value: o.Key, Selected: &o}
		}
		if q.Escalation != nil && q.Escalation.Recommendation != "" {
			return Answer{Text: q.Escalation.Recommendation}
		}
		return Answer{Value: AnswerNoDefault, Text: noDefault}
	case lower == "/retry" || lower == "/resume":
		return Answer{Value: lower}
	case lower == "/abort" || strings.HasPrefix(lower, "/abort "):
		return Answer{Value: "/abort", Text: strings.TrimSpace(s[len("/abort"):])}
	case q.Type == YesNo || q.Type == Confirmation:
		switch lower {
		case "y", "yes":
			return Answer{Value: AnswerYes}
		case "n", "no":
			return Answer{Value: AnswerNo}
		}
	}
	if o, ok := optionByKey(q.Options, strings.TrimRight(strings.Trim(s, "[]"), ").:")); ok {
		return Answer{Value: o.Key, Selected: &o}
	}
	return Answer{Text: s}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func optionByKey(opts []jobs.Option, key string) (jobs.Option, bool) {
	if key == "" {
		return jobs.Option{}, false
	}
	for _, o := range opts {
		if strings.EqualFold(o.Key, key) {
			return o, true
		}
	}
	return jobs.Option{}, false
}

// RequestFor turns an answer to an escalation's question into a resolution request. ok is false for an answer that
// resolves nothing (SKIPPED, TIMEOUT without a default).
func RequestFor(e *jobs.Escalation, runID string, a Answer, by, via string) (Request, bool) {
	req := Request{RunID: runID, EscalationID: e.ID, By: by, Via: via}
	switch {
	case a.Value == AnswerSkipped || a.Value == AnswerTimeout || a.Value == AnswerDeclined || a.Value == AnswerNoDefault:
		return req, false
	case a.Selected != nil:
		req.Type, req.Key = jobs.ResolveChoose, a.Selected.Key
	case a.Value == "/abort":
		req.Type, req.Reason = jobs.ResolveAbort, a.Text
		if req.Reason == "" {
			req.Reason = "aborted by " + by
		}
	case a.Value == "/retry":
		req.Type = jobs.ResolveRetry
	case a.Value == "/resume" || a.Value == AnswerYes:
		req.Type = jobs.ResolveResume
	case a.Value == AnswerNo:
		req.Type, req.Reason = jobs.ResolveAbort, "declined by "+by
	case strings.TrimSpace(a.Text) != "":
		req.Type, req.Text = jobs.ResolveAnswer, a.Text
	default:
		return req, false
	}
	return req, true
}

// Console asks on a terminal or pipe: one answer per line. At end of input every question is SKIPPED.
type Console struct {
	out   io.Writer
	lines chan string
	mu    sync.Mutex
	// Echo prints each answer after the prompt: set it when input is not a terminal, where nothing else shows it.
	Echo bool
}

// NewConsole reads answers from in and prompts on out. Reading starts at once and lasts until in ends: a blocked read
// of stdin cannot be cancelled, so it is done once, here, rather than per question.
func NewConsole(in io.Reader, out io.Writer) *Console {
	c := &Console{out: out, lines: make(chan string)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxAnswer)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(out, "\norch: reading answers: %v; no more answers can be read here\n", err)
		}
	}()
	return c
}

// maxAnswer bounds one typed or scripted answer.
const maxAnswer = 4 << 20

// Prompts the console prints before reading an answer: for an escalation, a human gate, a chat turn.
const (
	Prompt     = "Your response (or 'skip' for recommendation): "
	GatePrompt = "Select: "
	ChatPrompt = "> "
)

// Ask implements Interviewer.
func (c *Console) Ask(ctx context.Context, q Question) (Answer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var timeout <-chan time.Time
	if q.Timeout > 0 {
		t := time.NewTimer(q.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	prompt := Prompt
	if q.Prompt != "" {
		prompt = q.Prompt
	}
	for {
		fmt.Fprint(c.out, prompt)
		select {
		case <-ctx.Done():
			fmt.Fprintln(c.out)
			return Answer{}, ctx.Err()
		case <-timeout:
			fmt.Fprintln(c.out)
			return Answer{Value: AnswerTimeout}, nil
		case line, ok := <-c.lines:
			if !ok {
				fmt.Fprintln(c.out)
				return Answer{Value: AnswerSkipped}, nil
			}
			if strings.TrimSpace(line) == "" {
				if c.Echo {
					fmt.Fprintln(c.out)
				}
				continue
			}
			if c.Echo {
				fmt.Fprintln(c.out, line)
			}
			a := ParseAnswer(q, line)
			if a.Value == AnswerNoDefault {
				fmt.Fprintf(c.out, "  %s.\n", capitalize(a.Text))
				continue
			}
			return a, nil
		}
	}
}

// Queue answers from a script, in order; when it runs out every question is SKIPPED. `--answers FILE` uses it.
type Queue struct {
	mu      sync.Mutex
	answers []string
	out     io.Writer
}

// NewQueue returns a queue interviewer; out, if not nil, shows each answer as it is used.
func NewQueue(answers []string, out io.Writer) *Queue { return &Queue{answers: answers, out: out} }

// ReadAnswers reads an answers file: one answer per line, in order; blank lines are skipped.
func ReadAnswers(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxAnswer)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		out = append(out, line)
	}
	return out, sc.Err()
}

// Ask implements Interviewer.
func (q *Queue) Ask(ctx context.Context, qu Question) (Answer, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.answers) == 0 {
		return Answer{Value: AnswerSkipped}, nil
	}
	line := q.answers[0]
	q.answers = q.answers[1:]
	if q.out != nil {
		prompt := Prompt
		if qu.Prompt != "" {
			prompt = qu.Prompt
		}
		fmt.Fprintf(q.out, "%s%s (from the answers file)\n", prompt, line)
	}
	a := ParseAnswer(qu, line)
	if a.Value == AnswerNoDefault && q.out != nil {
		fmt.Fprintf(q.out, "  %s; the question stays open.\n", capitalize(a.Text))
	}
	return a, nil
}

// AutoApprove answers questions without a human: YES, the default option or else the first, or "auto-approved". It
// is for automation, so it declines (AnswerDeclined) what only a person may settle: a failure, a security or
// configuration problem — anything but the agent's own question, a gate or a conversation.
type AutoApprove struct{}

// autoApprovable reports whether auto-approval may answer a question of trigger t.
func autoApprovable(t jobs.Trigger) bool { return t == jobs.TriggerNeedsHelp || t.Conversational() }

// Ask implements Interviewer.
func (AutoApprove) Ask(ctx context.Context, q Question) (Answer, error) {
	if e := q.Escalation; e != nil && !autoApprovable(e.Trigger) {
		return Answer{Value: AnswerDeclined, Text: fmt.Sprintf("%s escalation on task %s cannot be auto-approved", e.Trigger, e.TaskID)}, nil
	}
	switch q.Type {
	case YesNo, Confirmation:
		return Answer{Value: AnswerYes}, nil
	case MultipleChoice:
		if o, ok := optionByKey(q.Options, q.Default); ok {
			return Answer{Value: o.Key, Selected: &o}, nil
		}
		if len(q.Options) > 0 {
			o := q.Options[0]
			return Answer{Value: o.Key, Selected: &o}, nil
		}
	}
	return Answer{Text: "auto-approved"}, nil
}

// Callback delegates to a function, for front ends that are not a terminal.
type Callback func(ctx context.Context, q Question) (Answer, error)

// Ask implements Interviewer.
func (f Callback) Ask(ctx context.Context, q Question) (Answer, error) { return f(ctx, q) }

// Recording wraps an interviewer and keeps every question and answer. With Store set, each pair about an escalation
// is also written to its run's audit trail, unanswered ones included (the answers themselves are audited again when
// they resolve the escalation).
type Recording struct {
	Inner Interviewer
	Store *store.Store
	By    string // who was asked (the terminal user)
	Via   string // console, answers-file, auto-approve
	mu    sync.Mutex
	pairs []Recorded
}

// Recorded is one question with its answer.
type Recorded struct {
	Question Question
	Answer   Answer
}

// Ask implements Interviewer.
func (r *Recording) Ask(ctx context.Context, q Question) (Answer, error) {
	a, err := r.Inner.Ask(ctx, q)
	if err != nil || a.Value == AnswerDeclined {
		return a, err // a decline is audited as such when it ends the run
	}
	r.mu.Lock()
	r.pairs = append(r.pairs, Recorded{q, a})
	r.mu.Unlock()
	if r.Store != nil && q.Escalation != nil && q.RunID != "" {
		entry := jobs.AuditEntry{TaskID: q.Escalation.TaskID, EscalationID: q.Escalation.ID, Action: "asked",
			Trigger: q.Escalation.Trigger, Detail: safetext.Redact(firstLine(q.Text)) + " → " + safetext.Redact(answerText(a)), By: r.By, Via: r.Via}
		_, aerr := r.Store.Update(ctx, q.RunID, func(run *jobs.Run, c *jobs.Change) error {
			c.Audit = append(c.Audit, entry)
			return nil
		})
		if aerr != nil && ctx.Err() == nil {
			return a, fmt.Errorf("recording the answer in the audit trail: %w", aerr)
		}
	}
	return a, nil
}

func answerText(a Answer) string {
	switch {
	case a.Selected != nil:
		return a.Selected.Key + ") " + a.Selected.Label
	case a.Value == AnswerSkipped:
		return "SKIPPED (nobody here could answer)"
	case a.Value != "":
		return strings.TrimSpace(a.Value + " " + a.Text)
	}
	return firstLine(a.Text)
}

// Recordings returns what was asked and answered so far.
func (r *Recording) Recordings() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.pairs...)
}
