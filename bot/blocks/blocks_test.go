package blocks

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks/blockstest"
	"github.com/orchrun/orch/jobs"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// t0 is when every test run starts: golden files do not depend on the clock.
var t0 = time.Date(2025, time.March, 14, 9, 26, 53, 0, time.UTC)

const runID = "r-7f3kq2m9xa"

// testRun is a three-task run working on its second task, with some cost.
func testRun() *jobs.Run {
	return &jobs.Run{
		ID:        runID,
		PlanPath:  "plans/feature.md",
		PlanTitle: "Add a cache to the API",
		Workspace: "/work/api",
		Options:   jobs.Options{Agent: "claude", Brain: "heuristic", Sandbox: "docker", MaxAttempts: 3},
		Origin:    jobs.Origin{Kind: "slack", User: "U0123ABCD", Channel: "C0456EFGH", ThreadTS: "1700000000.000100"},
		Status:    jobs.RunRunning,
		Tasks: []*jobs.Task{
			{ID: "1.1", Title: "Implement caching", Status: jobs.TaskCompleted, Started: 1, Attempts: []*jobs.Attempt{
				{N: 1, StartedAt: t0, CostUSD: 0.0312, InputTokens: 12000, OutputTokens: 3400,
					Brain: jobs.BrainUsage{Calls: 1, CostUSD: 0.0011, InputTokens: 900, OutputTokens: 120}},
			}},
			{ID: "1.2", Title: "Add tests for the cache", Status: jobs.TaskRunning, Started: 2, Failures: 1, Attempts: []*jobs.Attempt{
				{N: 1, StartedAt: t0.Add(time.Minute), CostUSD: 0.0095, InputTokens: 4000, OutputTokens: 800},
				{N: 2, StartedAt: t0.Add(2 * time.Minute)},
			}},
			{ID: "1.3", Title: "Document the cache", Status: jobs.TaskPending},
		},
		Cursor:    1,
		CreatedAt: t0,
		UpdatedAt: t0.Add(3*time.Minute + 12*time.Second),
	}
}

// parkedRun is testRun waiting for an answer to e on task e.TaskID: the tasks before it done, those after it not
// started.
func parkedRun(e *jobs.Escalation) *jobs.Run {
	r := testRun()
	r.Status = jobs.RunParked
	for i, t := range r.Tasks {
		if t.ID == e.TaskID {
			r.Cursor = i
		}
	}
	for _, t := range r.Tasks[r.Cursor+1:] {
		t.Status, t.Started, t.Failures, t.Attempts = jobs.TaskPending, 0, 0, nil
	}
	r.Tasks[r.Cursor].Status = jobs.TaskWaiting
	r.Escalations = append(r.Escalations, e)
	return r
}

func endedRun(status jobs.RunStatus, reason string) *jobs.Run {
	r := testRun()
	r.Status, r.Reason = status, reason
	r.EndedAt = t0.Add(4*time.Minute + 10*time.Second)
	r.UpdatedAt = r.EndedAt
	if status == jobs.RunCompleted {
		for _, t := range r.Tasks {
			t.Status = jobs.TaskCompleted
		}
		r.Cursor = len(r.Tasks)
	} else {
		r.Tasks[1].Status = jobs.TaskFailed
	}
	return r
}

func needsHelp() *jobs.Escalation {
	return &jobs.Escalation{
		ID: "e1", TaskID: "1.1", Trigger: jobs.TriggerNeedsHelp, Source: "agent",
		Question: "Which cache should I use? The API serves ~200 req/s & most keys are read-mostly.",
		Options: []jobs.Option{
			{Key: "A", Label: "Redis (shared across replicas, one more service to run)"},
			{Key: "B", Label: "In-memory LRU"},
			{Key: "C", Label: "File-based"},
		},
		Recommendation: "B", Attempt: 1, CreatedAt: t0.Add(40 * time.Second),
	}
}

func attemptCap() *jobs.Escalation {
	return &jobs.Escalation{
		ID: "e2", TaskID: "1.2", Trigger: jobs.TriggerAttemptCap, Source: "orch",
		Question: "Task 1.2 failed 3 times with similar errors (error similarity 87%). Please investigate and provide guidance.",
		Error:    "--- FAIL: TestCacheEviction (0.00s)\n    cache_test.go:42: got <nil>, want &Item{Key: \"a\"}\nFAIL",
		Attempt:  3, Failures: 3, Similarity: 0.87, CreatedAt: t0.Add(3 * time.Minute),
	}
}

func security() *jobs.Escalation {
	return &jobs.Escalation{
		ID: "e3", TaskID: "1.2", Trigger: jobs.TriggerSecurity, Source: "orch",
		Question: "The agent's output contains what looks like an AWS secret access key ([REDACTED]). " +
			"It was not retried.",
		Options: []jobs.Option{{Key: "A", Label: "should not become a button"}},
		Attempt: 2, Failures: 1, CreatedAt: t0.Add(3 * time.Minute),
	}
}

func manyOptions(n int) *jobs.Escalation {
	e := needsHelp()
	e.Options = nil
	for i := range n {
		key := string(rune('A' + i%26))
		if i >= 26 {
			key = strconv.Itoa(i - 25)
		}
		e.Options = append(e.Options, jobs.Option{Key: key, Label: fmt.Sprintf("Approach number %d", i+1)})
	}
	e.Recommendation = "C"
	return e
}

func longQuestion() *jobs.Escalation {
	e := needsHelp()
	var b strings.Builder
	b.WriteString("I found this in the logs:\n```\n")
	for b.Len() < 10_000 {
		b.WriteString("cache miss for key <user:42> & retrying — é 😀\n")
	}
	e.Question = b.String()
	return e
}

func answered(e *jobs.Escalation, res jobs.Resolution) *jobs.Escalation {
	res.At = e.CreatedAt.Add(2*time.Minute + 5*time.Second)
	e.Resolution = &res
	return e
}

func testEvents() []jobs.Event {
	ev := func(i int, task string, b jobs.Body) jobs.Event {
		e := jobs.NewEvent(runID, task, b)
		e.Time = t0.Add(time.Duration(i) * 10 * time.Second)
		return e
	}
	return []jobs.Event{
		ev(0, "", jobs.RunStartedEvent{Tasks: 3, Plan: "plans/feature.md"}),
		ev(1, "1.1", jobs.TaskStartedEvent{Attempt: 1, MaxAttempts: 3}),
		ev(2, "1.1", jobs.TaskCompletedEvent{Summary: "Implemented an in-memory LRU cache. All tests pass."}),
		ev(3, "1.2", jobs.TaskStartedEvent{Attempt: 1, MaxAttempts: 3}),
		ev(4, "1.2", jobs.TaskFailedEvent{Attempt: 1, MaxAttempts: 3, Error: "cache_test.go:42: got <nil>, want &Item{}"}),
		ev(5, "1.2", jobs.RetryingEvent{Guidance: "check the eviction order"}),
		ev(6, "1.2", jobs.TaskStartedEvent{Attempt: 2, MaxAttempts: 3}),
		ev(7, "1.2", jobs.BrainFallbackEvent{Reason: "anthropic: 529 overloaded"}),
		ev(8, "1.2", jobs.EscalationEvent{Trigger: jobs.TriggerNeedsHelp, EscalationID: "e1"}),
		ev(9, "1.2", jobs.ResolutionEvent{By: "U0123ABCD", Via: "slack", Summary: "chose B) In-memory LRU"}),
		ev(10, "1.2", jobs.ResumedEvent{Guidance: "use B", Resolution: "choose"}),
		ev(11, "1.2", jobs.LoopDetectedEvent{Failures: 3, Similarity: 0.87, Similar: true}),
	}
}

type goldenCase struct {
	name string
	msg  Message
}

func goldenCases() []goldenCase {
	rootParked := parkedRun(needsHelp())
	paused := testRun()
	paused.Status, paused.Reason = jobs.RunPaused, "the brain is unavailable: anthropic: 529 overloaded (3 tries)"
	return []goldenCase{
		{"root_running", RootMessage(testRun(), "")},
		{"root_parked", RootMessage(rootParked, "")},
		{"root_completed", RootMessage(endedRun(jobs.RunCompleted, ""), "")},
		{"root_paused", RootMessage(paused, "")},
		{"progress", ProgressMessage(testRun(), testEvents())},
		{"escalation_needs_help", EscalationMessage(parkedRun(needsHelp()), needsHelp(), "")},
		{"escalation_attempt_cap", EscalationMessage(parkedRun(attemptCap()), attemptCap(), "")},
		{"escalation_security", EscalationMessage(parkedRun(security()), security(), "")},
		{"escalation_many_options", EscalationMessage(parkedRun(manyOptions(30)), manyOptions(30), "")},
		{"escalation_long_question", EscalationMessage(parkedRun(longQuestion()), longQuestion(), "")},
		{"escalation_page", EscalationMessage(parkedRun(attemptCap()), attemptCap(), testPage)},
		{"escalation_work", EscalationMessage(parkedRun(workedQuestion()), workedQuestion(), "")},
		{"answered_slack", AnsweredMessage(testRun(), answered(needsHelp(),
			jobs.Resolution{Type: jobs.ResolveChoose, Key: "B", By: "U0123ABCD", Via: "slack"}))},
		{"answered_terminal", AnsweredMessage(testRun(), answered(attemptCap(),
			jobs.Resolution{Type: jobs.ResolveAnswer, Text: "The eviction test assumes FIFO; make it LRU.", By: "alice", Via: "cli"}))},
		{"answered_abort", AnsweredMessage(testRun(), answered(security(),
			jobs.Resolution{Type: jobs.ResolveAbort, Reason: "the key is live; rotating it first", By: "U0123ABCD", Via: "slack"}))},
		{"final_completed", FinalMessage(endedRun(jobs.RunCompleted, ""))},
		{"final_failed", FinalMessage(endedRun(jobs.RunFailed, "task 1.2 needed a human 5 times (escalation loop)"))},
		{"final_aborted", FinalMessage(endedRun(jobs.RunAborted, "aborted from the terminal by alice"))},
		{"paused", PausedMessage(paused)},
		{"not_started", NotStartedMessage("U0123ABCD", "Could not start the run: invalid run request: agent \"claude\" "+
			"is not installed on this server <!channel> *now*")},
	}
}

// wire is a message as the golden files hold it.
func wire(t *testing.T, m Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Text   string        `json:"text"`
		Blocks []slack.Block `json:"blocks"`
	}{m.Text, m.Blocks}); err != nil {
		t.Fatalf("encoding message: %v", err)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			checkMessage(t, c.msg)
			got := wire(t, c.msg)
			file := filepath.Join("testdata", "golden", c.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./bot/blocks -run TestGolden -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what is rendered now (go test ./bot/blocks -run TestGolden -update accepts it):\n%s",
					file, firstDiff(string(want), string(got)))
			}
		})
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, wl, gl)
		}
	}
	return "(same lines)"
}

// TestBlocksRoundTrip decodes every message's blocks with slack-go, as Slack's payloads are decoded, and encodes them
// again: anything slack-go does not model would be lost on the way and show as a difference.
func TestBlocksRoundTrip(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			first, err := json.Marshal(slack.Blocks{BlockSet: c.msg.Blocks})
			if err != nil {
				t.Fatal(err)
			}
			var decoded slack.Blocks
			if err := json.Unmarshal(first, &decoded); err != nil {
				t.Fatalf("slack-go cannot decode the blocks: %v", err)
			}
			if len(decoded.BlockSet) != len(c.msg.Blocks) {
				t.Fatalf("decoded %d blocks, sent %d", len(decoded.BlockSet), len(c.msg.Blocks))
			}
			for i, b := range decoded.BlockSet {
				if _, unknown := b.(*slack.UnknownBlock); unknown {
					t.Errorf("block %d decodes as an unknown block", i)
				}
			}
			second, err := json.Marshal(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, second) {
				t.Errorf("blocks change on a round trip:\n%s", firstDiff(string(first), string(second)))
			}
		})
	}
}

// checkMessage fails when m breaks one of Slack's limits or could not be posted, or when a click on one of its buttons
// would not read back.
func checkMessage(t *testing.T, m Message) {
	t.Helper()
	blockstest.Check(t, m.Text, m.Blocks)
	for _, btn := range blockstest.Buttons(m.Blocks) {
		if btn.ActionID == ActionPage {
			if btn.URL == "" || btn.Value != "" {
				t.Errorf("the run page's button has url %q and value %q, want a link alone", btn.URL, btn.Value)
			}
			continue
		}
		if _, err := DecodeAction(btn.ActionID, btn.Value); err != nil {
			t.Errorf("button %q: a click would not decode: %v", btn.Text.Text, err)
		}
	}
}

// buttons returns a message's buttons in order.
func buttons(m Message) []*slack.ButtonBlockElement {
	var out []*slack.ButtonBlockElement
	for _, b := range m.Blocks {
		if a, ok := b.(*slack.ActionBlock); ok {
			for _, el := range a.Elements.ElementSet {
				out = append(out, el.(*slack.ButtonBlockElement))
			}
		}
	}
	return out
}

// texts returns every text of a message's blocks, in order.
func texts(m Message) []string {
	var out []string
	for _, b := range m.Blocks {
		switch b := b.(type) {
		case *slack.HeaderBlock:
			out = append(out, b.Text.Text)
		case *slack.SectionBlock:
			out = append(out, b.Text.Text)
		case *slack.ContextBlock:
			for _, el := range b.ContextElements.Elements {
				out = append(out, el.(*slack.TextBlockObject).Text)
			}
		case *slack.ActionBlock:
			for _, el := range b.Elements.ElementSet {
				out = append(out, el.(*slack.ButtonBlockElement).Text.Text)
			}
		}
	}
	return out
}

func allText(m Message) string { return m.Text + "\n" + strings.Join(texts(m), "\n") }

func TestEscalationButtons(t *testing.T) {
	e := needsHelp()
	m := EscalationMessage(parkedRun(e), e, "")
	bs := buttons(m)
	type want struct {
		text, actionID string
		style          slack.Style
		value          ActionValue
	}
	wants := []want{
		{"A) Redis (shared across replicas, one more service to run)", "orch_choose:A", "", ActionValue{runID, "e1", "choose", "A"}},
		{"B) In-memory LRU (recommended)", "orch_choose:B", slack.StylePrimary, ActionValue{runID, "e1", "choose", "B"}},
		{"C) File-based", "orch_choose:C", "", ActionValue{runID, "e1", "choose", "C"}},
		{"Answer…", "orch_answer", "", ActionValue{runID, "e1", "answer", ""}},
		// An agent's question is answered, not retried: no Retry (escalation.AnswersOf).
		{"Abort", "orch_abort", slack.StyleDanger, ActionValue{runID, "e1", "abort", ""}},
	}
	if len(bs) != len(wants) {
		t.Fatalf("%d buttons, want %d: %v", len(bs), len(wants), texts(m))
	}
	for i, w := range wants {
		b := bs[i]
		if b.Text.Text != w.text || b.ActionID != w.actionID || b.Style != w.style {
			t.Errorf("button %d = %q %q %q, want %q %q %q", i, b.Text.Text, b.ActionID, b.Style, w.text, w.actionID, w.style)
		}
		v, err := DecodeAction(b.ActionID, b.Value)
		if err != nil || v != w.value {
			t.Errorf("button %d decodes as %+v, %v; want %+v", i, v, err, w.value)
		}
		if (b.Confirm != nil) != (w.actionID == ActionAbort) {
			t.Errorf("button %d: confirm dialog %v, want one on Abort only", i, b.Confirm)
		}
	}
	if c := bs[4].Confirm; c == nil || c.Style != slack.StyleDanger || !strings.Contains(c.Text.Text, runID) {
		t.Errorf("abort confirm = %+v, want a danger dialog naming the run", c)
	}
	h := m.Blocks[0].(*slack.HeaderBlock).Text.Text
	if h != "Task 1.1: Implement caching needs you" {
		t.Errorf("header = %q", h)
	}
	all := allText(m)
	for _, s := range []string{"the agent asked", "attempt 1/3", "reply in this thread", "Which cache should I use?"} {
		if !strings.Contains(all, s) {
			t.Errorf("message does not say %q:\n%s", s, all)
		}
	}
	if strings.Contains(all, "similarity") {
		t.Errorf("similarity shown though it is 0:\n%s", all)
	}
}

// A button is plain_text, which shows backticks as they are: an option's code spans lose them on its button.
func TestButtonsShowCodeWithoutBackticks(t *testing.T) {
	e := needsHelp()
	e.Options = []jobs.Option{{Key: "A", Label: "Pin `numpy<2` in `requirements.txt`"}, {Key: "B", Label: "Port the code"}}
	m := EscalationMessage(parkedRun(e), e, "")
	if got := buttons(m)[0].Text.Text; got != "A) Pin numpy<2 in requirements.txt" {
		t.Errorf("button = %q, want the label without backticks", got)
	}
}

func TestEscalationAttemptCap(t *testing.T) {
	e := attemptCap()
	all := allText(EscalationMessage(parkedRun(e), e, ""))
	for _, s := range []string{"attempt cap", "attempt 3/3", "error similarity 87%", "TestCacheEviction",
		"got &lt;nil&gt;, want &amp;Item"} {
		if !strings.Contains(all, s) {
			t.Errorf("message does not say %q:\n%s", s, all)
		}
	}
}

func TestEscalationSecurity(t *testing.T) {
	e := security()
	m := EscalationMessage(parkedRun(e), e, "")
	var ids []string
	for _, b := range buttons(m) {
		ids = append(ids, b.ActionID)
	}
	if strings.Join(ids, " ") != "orch_answer orch_retry orch_abort" {
		t.Errorf("security escalation buttons = %v, want only Answer…, Retry and Abort", ids)
	}
	if all := allText(m); !strings.Contains(all, "rotate the credential") {
		t.Errorf("no hint to rotate the credential:\n%s", all)
	}
}

func TestEscalationManyOptions(t *testing.T) {
	t.Run("30 options: every one a button, in actions blocks of at most 25", func(t *testing.T) {
		e := manyOptions(30)
		m := EscalationMessage(parkedRun(e), e, "")
		checkMessage(t, m)
		var rows []int
		for _, b := range m.Blocks {
			if a, ok := b.(*slack.ActionBlock); ok {
				rows = append(rows, len(a.Elements.ElementSet))
			}
		}
		if fmt.Sprint(rows) != "[25 5 2]" { // the options, then Answer… and Abort
			t.Errorf("actions blocks hold %v buttons, want [25 5 2]", rows)
		}
		chosen := map[string]bool{}
		for _, b := range buttons(m) {
			if v, err := DecodeAction(b.ActionID, b.Value); err == nil && v.Kind == KindChoose {
				chosen[v.Key] = true
				if !strings.HasPrefix(b.Text.Text, v.Key+") ") {
					t.Errorf("button %q does not start with its key %q", b.Text.Text, v.Key)
				}
			}
		}
		for _, o := range e.Options {
			if !chosen[o.Key] {
				t.Errorf("option %s has no button", o.Key)
			}
		}
	})
	t.Run("more than 50 blocks can hold: the rest summarised", func(t *testing.T) {
		e := manyOptions(3000)
		m := EscalationMessage(parkedRun(e), e, "")
		checkMessage(t, m)
		shown := 0
		for _, b := range buttons(m) {
			if strings.HasPrefix(b.ActionID, ActionChoose) {
				shown++
			}
		}
		if shown == 0 || shown >= 3000 {
			t.Fatalf("%d option buttons", shown)
		}
		want := fmt.Sprintf("%d options not shown as buttons", 3000-shown)
		if all := allText(m); !strings.Contains(all, want) {
			t.Errorf("no line saying %q", want)
		}
		if ids := buttons(m); ids[len(ids)-1].ActionID != ActionAbort {
			t.Errorf("Abort is missing when options overflow")
		}
	})
	t.Run("a key that cannot be a button is named instead", func(t *testing.T) {
		e := needsHelp()
		e.Options = append(e.Options, jobs.Option{Key: "D E", Label: "spaced key"})
		m := EscalationMessage(parkedRun(e), e, "")
		checkMessage(t, m)
		if all := allText(m); !strings.Contains(all, "1 option not shown as buttons (D E)") {
			t.Errorf("the unusable key is not named:\n%s", all)
		}
	})
}

func TestLongTextIsCut(t *testing.T) {
	e := longQuestion()
	m := EscalationMessage(parkedRun(e), e, "")
	checkMessage(t, m)
	var q string
	for _, s := range texts(m) {
		if strings.Contains(s, "I found this in the logs") {
			q = s
		}
	}
	i := strings.LastIndex(q, "\n… [cut: ")
	if i < 0 {
		t.Fatalf("no cut marker in %q", q[max(0, len(q)-100):])
	}
	var rest int
	if _, err := fmt.Sscanf(q[i:], "\n… [cut: %d more characters]", &rest); err != nil {
		t.Fatalf("marker %q: %v", q[i:], err)
	}
	kept := strings.TrimSuffix(q[:i], "\n```") // the cut closes the fence it left open
	if !strings.HasSuffix(q[:i], "\n```") {
		t.Errorf("the cut left a code fence open")
	}
	raw := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(kept)
	question := strings.TrimSpace(e.Question)
	if !strings.HasPrefix(question, raw) {
		t.Errorf("the kept text is not the question's start")
	}
	if got, total := utf8.RuneCountInString(raw)+rest, utf8.RuneCountInString(question); got != total {
		t.Errorf("kept %d + cut %d characters = %d, question has %d", utf8.RuneCountInString(raw), rest, got, total)
	}
}

func TestCutOnRuneBoundary(t *testing.T) {
	for _, s := range []string{strings.Repeat("😀", 2000), strings.Repeat("é&", 2000), strings.Repeat("a", 2999) + "😀"} {
		for _, long := range []bool{true, false} {
			got := escapeCut(s, maxSectionText, long)
			if !utf8.ValidString(got) || textLen(got) > maxSectionText {
				t.Errorf("escapeCut(%.10q…, long=%v): %d characters, valid UTF-8 %v", s, long, textLen(got), utf8.ValidString(got))
			}
			if strings.Contains(got, "&a…") || strings.HasSuffix(strings.TrimSuffix(got, "…"), "&am") {
				t.Errorf("an entity was cut in two: %q", got[len(got)-20:])
			}
		}
	}
	if got := cutPlain("\xff\xfeabc", 10); got != "\uFFFDabc" {
		t.Errorf("invalid UTF-8 = %q", got)
	}
}

func TestButtonAndHeaderLimits(t *testing.T) {
	e := needsHelp()
	e.Options[1].Label = strings.Repeat("very long label ", 20)
	r := parkedRun(e)
	r.Tasks[0].Title = strings.Repeat("An extremely long task title ", 12)
	m := EscalationMessage(r, e, "")
	checkMessage(t, m)
	b := buttons(m)[1]
	if !strings.HasPrefix(b.Text.Text, "B) very long label") || !strings.HasSuffix(b.Text.Text, "… (recommended)") {
		t.Errorf("cut recommended button = %q", b.Text.Text)
	}
	h := m.Blocks[0].(*slack.HeaderBlock).Text.Text
	if !strings.HasSuffix(h, "… needs you") || textLen(h) > maxHeaderText {
		t.Errorf("header = %q (%d characters)", h, textLen(h))
	}
	// The label the button cut is there in full.
	if all := allText(m); !strings.Contains(all, "*B)* "+strings.TrimSpace(e.Options[1].Label)) {
		t.Errorf("the full label is not listed")
	}
}

func TestContextElementLimit(t *testing.T) {
	var els []string
	for i := range 15 {
		els = append(els, fmt.Sprint("element ", i))
	}
	c := contextBlock(els...)
	if n := len(c.ContextElements.Elements); n != maxContextElements {
		t.Fatalf("%d elements, want %d", n, maxContextElements)
	}
	last := c.ContextElements.Elements[maxContextElements-1].(*slack.TextBlockObject).Text
	if last != "element 9 · element 10 · element 11 · element 12 · element 13 · element 14" {
		t.Errorf("the rest is not joined into the last element: %q", last)
	}
}

// TestEscaping feeds every message text that an agent or a human wrote, and checks none of it reaches Slack as a
// mention, a special command or a link.
func TestEscaping(t *testing.T) {
	const evil = "<!channel> <!here|here> <@U999EVIL> <https://evil.example|click> & <#C123>"
	e := needsHelp()
	e.Question = "Please approve " + evil + "\n```go\nif a < b && c > d {}\n```"
	e.Options[0].Label = evil
	e.Recommendation = evil
	e.Error = evil
	e.Name = evil
	r := parkedRun(e)
	r.PlanTitle = evil
	r.PlanPath = "plans/" + evil + ".md"
	r.Reason = evil
	r.Tasks[0].Title = evil
	r.Origin = jobs.Origin{Kind: "cli", User: evil}
	events := []jobs.Event{
		jobs.NewEvent(runID, "1.1", jobs.TaskFailedEvent{Error: evil}),
		jobs.NewEvent(runID, "1.1", jobs.ResolutionEvent{By: evil, Via: "slack", Summary: evil}),
		jobs.NewEvent(runID, "1.1", jobs.RunAbortedEvent{By: evil, Reason: evil}),
		jobs.NewEvent(runID, evil, jobs.UnknownEvent{Type: evil}),
	}
	ended := endedRun(jobs.RunFailed, evil)
	ended.PlanTitle = evil
	msgs := map[string]Message{
		"escalation": EscalationMessage(r, e, ""),
		"root":       RootMessage(r, ""),
		"progress":   ProgressMessage(r, events),
		"final":      FinalMessage(ended),
		"paused":     PausedMessage(r),
		"answered":   AnsweredMessage(r, answered(needsHelp(), jobs.Resolution{Type: jobs.ResolveAnswer, Text: evil, By: evil, Via: "slack"})),
		"aborted":    AnsweredMessage(r, answered(needsHelp(), jobs.Resolution{Type: jobs.ResolveAbort, Reason: evil, By: evil, Via: "cli"})),
	}
	for name, m := range msgs {
		t.Run(name, func(t *testing.T) {
			checkMessage(t, m) // no <…> but orch's own, no bare &
			all := allText(m)
			for _, s := range []string{"<!channel>", "<!here", "<@U999EVIL>", "<https:", "<#C123>"} {
				if strings.Contains(all, s) && !strings.Contains(strings.Join(buttonTexts(m), "\n"), s) {
					t.Errorf("%q reaches Slack as markup", s)
				}
			}
		})
	}
	q := allText(msgs["escalation"])
	if !strings.Contains(q, "```go\nif a &lt; b &amp;&amp; c &gt; d {}\n```") {
		t.Errorf("the code fence does not read as code:\n%s", q)
	}
	if !strings.Contains(q, "&lt;!channel&gt;") {
		t.Errorf("the question's text is not shown escaped:\n%s", q)
	}
}

// buttonTexts are plain_text, which Slack never parses: markup there shows as typed.
func buttonTexts(m Message) []string {
	var out []string
	for _, b := range buttons(m) {
		out = append(out, b.Text.Text)
	}
	for _, b := range m.Blocks {
		if h, ok := b.(*slack.HeaderBlock); ok {
			out = append(out, h.Text.Text)
		}
	}
	return out
}

func TestAnsweredMessage(t *testing.T) {
	tests := []struct {
		name string
		res  jobs.Resolution
		want []string
		not  []string
	}{
		{"slack user chose", jobs.Resolution{Type: jobs.ResolveChoose, Key: "B", By: "U0123ABCD", Via: "slack"},
			[]string{"<@U0123ABCD> chose B) In-memory LRU after 2m 5s", "in Slack"}, nil},
		{"terminal user answered", jobs.Resolution{Type: jobs.ResolveAnswer, Text: "use the LRU one", By: "alice", Via: "cli"},
			[]string{"alice answered after 2m 5s:\nuse the LRU one", "at the terminal"}, []string{"<@"}},
		{"terminal user who looks like a Slack id", jobs.Resolution{Type: jobs.ResolveRetry, By: "U0123ABCD", Via: "console"},
			[]string{"U0123ABCD asked for one more attempt after 2m 5s"}, []string{"<@"}},
		{"slack name that is no user id", jobs.Resolution{Type: jobs.ResolveResume, By: "bob", Via: "slack"},
			[]string{"bob resumed after 2m 5s"}, []string{"<@"}},
		{"abort with reason", jobs.Resolution{Type: jobs.ResolveAbort, Reason: "wrong plan", By: "U0123ABCD", Via: "slack"},
			[]string{"<@U0123ABCD> aborted after 2m 5s: wrong plan"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := AnsweredMessage(testRun(), answered(needsHelp(), tt.res))
			checkMessage(t, m)
			if len(buttons(m)) != 0 {
				t.Errorf("an answered question still has buttons")
			}
			all := allText(m)
			for _, s := range tt.want {
				if !strings.Contains(all, s) {
					t.Errorf("does not say %q:\n%s", s, all)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(all, s) {
					t.Errorf("says %q:\n%s", s, all)
				}
			}
			if !strings.Contains(all, "Which cache should I use?") {
				t.Errorf("the question is gone")
			}
		})
	}
}

func TestHumanDuration(t *testing.T) {
	tests := map[time.Duration]string{
		-time.Second:                    "0s",
		400 * time.Millisecond:          "0s",
		45 * time.Second:                "45s",
		2*time.Minute + 5*time.Second:   "2m 5s",
		3 * time.Minute:                 "3m",
		time.Hour + 2*time.Minute + 9:   "1h 2m",
		26*time.Hour + 30*time.Minute:   "1d 2h",
		72 * time.Hour:                  "3d",
		59*time.Minute + 59*time.Second: "59m 59s",
	}
	for d, want := range tests {
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestFinalMessage(t *testing.T) {
	for _, tt := range []struct {
		status jobs.RunStatus
		reason string
		want   []string
	}{
		{jobs.RunCompleted, "", []string{"Run " + runID + " completed in 4m 10s, cost $0.0418"}},
		{jobs.RunFailed, "escalation loop", []string{"Run " + runID + " failed after 4m 10s", "*Reason:* escalation loop"}},
		{jobs.RunAborted, "wrong plan", []string{"Run " + runID + " aborted after 4m 10s", "*Reason:* wrong plan"}},
	} {
		t.Run(string(tt.status), func(t *testing.T) {
			m := FinalMessage(endedRun(tt.status, tt.reason))
			checkMessage(t, m)
			all := allText(m)
			for _, s := range append(tt.want, "`"+runID+"` *"+string(tt.status)+"*", "$0.0418") {
				if !strings.Contains(all, s) {
					t.Errorf("does not say %q:\n%s", s, all)
				}
			}
		})
	}
}

// The end of a run with a branch names the branch, what it holds and where to review it.
func TestFinalMessageNamesTheBranch(t *testing.T) {
	r := endedRun(jobs.RunCompleted, "")
	r.Git = &jobs.Git{Repo: "/repo", Base: "main", BaseCommit: "0123456789ab", Branch: "orch/" + runID, Head: "abcdef",
		Commits: 2, FilesChanged: 3, Insertions: 40, Deletions: 5, Push: "origin", Pushed: "abcdef",
		PullRequest: "https://github.com/acme/app/pull/7"}
	m := FinalMessage(r)
	checkMessage(t, m)
	all := allText(m)
	for _, s := range []string{"`orch/" + runID + "`", "2 commits on `main`", "3 files changed, +40 −5", "pushed to `origin`",
		"<https://github.com/acme/app/pull/7|Draft pull request>"} {
		if !strings.Contains(all, s) {
			t.Errorf("does not say %q:\n%s", s, all)
		}
	}
	if !strings.Contains(m.Text, "branch orch/"+runID+", 2 commits") {
		t.Errorf("the notification text does not name the branch: %q", m.Text)
	}
	r.Git = &jobs.Git{Base: "main", Branch: "orch/" + runID}
	if all := allText(FinalMessage(r)); !strings.Contains(all, "no changes from `main`") {
		t.Errorf("a branch with nothing on it: %s", all)
	}
	r.Git = nil
	if all := allText(FinalMessage(r)); strings.Contains(all, "Branch") {
		t.Errorf("a run without a branch names one: %s", all)
	}
}

func TestPausedMessage(t *testing.T) {
	r := testRun()
	r.Status, r.Reason = jobs.RunPaused, "the brain is unavailable"
	m := PausedMessage(r)
	for _, s := range []string{m.Text, strings.Join(texts(m), "\n")} {
		if !strings.Contains(s, "the brain is unavailable") || !strings.Contains(s, "resume with: orch resume "+runID) {
			t.Errorf("paused message does not say why and how to resume: %q", s)
		}
	}
}

func TestProgressIsBounded(t *testing.T) {
	var events []jobs.Event
	for i := range 60 {
		e := jobs.NewEvent(runID, "1.2", jobs.TaskFailedEvent{Attempt: 1, MaxAttempts: 3,
			Error: fmt.Sprintf("error %d: %s", i, strings.Repeat("x", 5000))})
		e.Time = t0.Add(time.Duration(i) * time.Second)
		events = append(events, e)
	}
	m := ProgressMessage(testRun(), events)
	checkMessage(t, m)
	lines := strings.Split(m.Blocks[0].(*slack.SectionBlock).Text.Text, "\n")
	if len(lines) != maxProgressEvents {
		t.Fatalf("%d event lines, want %d", len(lines), maxProgressEvents)
	}
	if !strings.Contains(lines[len(lines)-1], "error 59:") || !strings.Contains(lines[0], "error 50:") {
		t.Errorf("not the last events: %q … %q", lines[0], lines[len(lines)-1])
	}
}

// The progress message only adds to the root message, which is kept up to date beside it: the events. What the run
// does now (its task and attempt), its tasks, who started it and its cost are the root's, and said once.
func TestProgressAddsToTheRoot(t *testing.T) {
	r := testRun()
	root, progress := RootMessage(r, ""), ProgressMessage(r, testEvents())
	rootText := strings.Join(texts(root), "\n")
	for _, said := range []string{"*Running*: Task 1.2: Add tests for the cache (2 of 3)", "_(attempt 2)_", "Cost: $0.0418",
		"started by <@U0123ABCD>"} {
		if !strings.Contains(rootText, said) {
			t.Fatalf("the root message does not say %q:\n%s", said, rootText)
		}
	}
	progressText := strings.Join(texts(progress), "\n")
	for _, repeated := range []string{"Cost", "tokens in", "tasks done", "Add a cache to the API", "plans/feature.md",
		"<@U0123ABCD> ·", "attempt 2/3*", "* · attempt"} {
		if strings.Contains(progressText, repeated) {
			t.Errorf("the progress message repeats the root's %q:\n%s", repeated, progressText)
		}
	}
	for _, line := range strings.Split(progressText, "\n") {
		if strings.Contains(rootText, line) {
			t.Errorf("the progress message's line %q is the root's too", line)
		}
	}
	if !strings.Contains(progressText, "Invoking the agent (attempt 2/3)") || !strings.Contains(progressText, "LOOP DETECTED") {
		t.Errorf("the progress message lacks the run's events:\n%s", progressText)
	}
}

func TestRootManyTasks(t *testing.T) {
	r := testRun()
	r.Tasks = nil
	for i := range 1000 {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: fmt.Sprint("1.", i), Title: strings.Repeat("a task & more ", 5), Status: jobs.TaskPending})
	}
	m := RootMessage(r, "")
	checkMessage(t, m)
	if all := allText(m); !regexp.MustCompile(`… and \d+ more tasks`).MatchString(all) {
		t.Errorf("the tasks left out are not counted")
	}
	if !strings.Contains(allText(m), "started by <@U0123ABCD>") {
		t.Errorf("root message does not say who started the run")
	}
}

// A call the agent paused at is answered with its own options: the buttons show their labels alone (Claude's own
// "(Recommended)" not repeated), with Answer… and Abort and no Retry, since the session waits for this answer.
func TestPausedCallButtons(t *testing.T) {
	approval := &jobs.Escalation{ID: "e1", TaskID: "1.1", Trigger: jobs.TriggerApproval, Call: true,
		Question: "Run: git push --force", Options: []jobs.Option{{Key: "A", Label: "Allow once"},
			{Key: "B", Label: "Allow for this run (Bash(git push:*))"}, {Key: "C", Label: "Deny"}}}
	question := &jobs.Escalation{ID: "e2", TaskID: "1.1", Trigger: jobs.TriggerNeedsHelp, Call: true,
		Question: "Which cache?", Recommendation: "A", Options: []jobs.Option{{Key: "A", Label: "Redis (Recommended)"},
			{Key: "B", Label: "In-process LRU"}, {Key: "C", Label: "Memcached"}}}
	for _, tt := range []struct {
		e    *jobs.Escalation
		want []string
		hint string
	}{
		{approval, []string{"Allow once", "Allow for this run (Bash(git push:*))", "Deny", "Answer…", "Abort"}, "deny the call with your reason"},
		{question, []string{"Redis (Recommended)", "In-process LRU", "Memcached", "Answer…", "Abort"}, "an answer of your own"},
	} {
		m := EscalationMessage(parkedRun(tt.e), tt.e, "")
		var got []string
		for _, b := range buttons(m) {
			got = append(got, b.Text.Text)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: buttons %q, want %q", tt.e.Trigger, got, tt.want)
		}
		if !strings.Contains(allText(m), tt.hint) {
			t.Errorf("%s: the hint does not say %q:\n%s", tt.e.Trigger, tt.hint, allText(m))
		}
	}
}

// Every kind of moment an event can be has its icon in a thread.
func TestEveryMarkHasAnEmoji(t *testing.T) {
	for _, m := range jobs.Marks {
		if e := markEmoji[m]; !strings.HasPrefix(e, ":") || !strings.HasSuffix(e, ":") {
			t.Errorf("mark %q has no emoji (%q)", m, e)
		}
	}
}
