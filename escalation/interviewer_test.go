package escalation_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

var (
	optA = jobs.Option{Key: "A", Label: "Redis"}
	optB = jobs.Option{Key: "B", Label: "In-memory"}
	optC = jobs.Option{Key: "C", Label: "Postgres"}
)

func choice(def string) escalation.Question {
	return escalation.Question{Text: "Which cache?", Type: escalation.MultipleChoice,
		Options: []jobs.Option{optA, optB, optC}, Default: def}
}

func sel(o jobs.Option) escalation.Answer { return escalation.Answer{Value: o.Key, Selected: &o} }

func TestQuestionFor(t *testing.T) {
	tests := []struct {
		name string
		e    *jobs.Escalation
		want escalation.Question
	}{
		{"options with a recommended key",
			&jobs.Escalation{ID: "e1", TaskID: "T1", Question: "Which?", Options: []jobs.Option{optA, optB}, Recommendation: "B"},
			escalation.Question{Text: "Which?", Type: escalation.MultipleChoice, Options: []jobs.Option{optA, optB}, Default: "B", Stage: "T1"}},
		{"options with a recommendation in words",
			&jobs.Escalation{ID: "e1", TaskID: "T1", Question: "Which?", Options: []jobs.Option{optA, optB}, Recommendation: "whichever"},
			escalation.Question{Text: "Which?", Type: escalation.MultipleChoice, Options: []jobs.Option{optA, optB}, Stage: "T1"}},
		{"no options",
			&jobs.Escalation{ID: "e1", TaskID: "T2", Question: "Failed 3 times.", Recommendation: "B"},
			escalation.Question{Text: "Failed 3 times.", Type: escalation.Freeform, Stage: "T2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := escalation.QuestionFor(tt.e)
			if got.Escalation != tt.e {
				t.Errorf("question does not point at its escalation")
			}
			got.Escalation = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("QuestionFor =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	noDefault := escalation.ParseAnswer(choice(""), "skip")
	if noDefault.Value != escalation.AnswerNoDefault || !strings.Contains(noDefault.Text, "/retry") || !strings.Contains(noDefault.Text, "/abort") {
		t.Fatalf("skip with nothing to take = %+v, want NO_DEFAULT naming the valid answers", noDefault)
	}
	recommended := choice("")
	recommended.Escalation = &jobs.Escalation{Recommendation: "use whatever is already deployed"}
	yesNo := escalation.Question{Text: "Continue?", Type: escalation.YesNo}
	confirm := escalation.Question{Text: "Deploy?", Type: escalation.Confirmation}
	free := escalation.Question{Text: "What now?", Type: escalation.Freeform}

	tests := []struct {
		name string
		q    escalation.Question
		line string
		want escalation.Answer
	}{
		{"key", choice(""), "B", sel(optB)},
		{"lower-case key", choice(""), "b", sel(optB)},
		{"key with spaces", choice(""), "  c \n", sel(optC)},
		{"key with parenthesis", choice(""), "B)", sel(optB)},
		{"key with dot", choice(""), "a.", sel(optA)},
		{"key with colon", choice(""), "A:", sel(optA)},
		{"bracketed key", choice(""), "[c]", sel(optC)},
		{"not an option", choice(""), "D", escalation.Answer{Text: "D"}},
		{"free text", choice(""), "Use Postgres, it is already deployed", escalation.Answer{Text: "Use Postgres, it is already deployed"}},
		{"free text trimmed", free, "  just retry it  ", escalation.Answer{Text: "just retry it"}},
		{"skip takes the default", choice("B"), "skip", sel(optB)},
		{"SKIP takes the default", choice("b"), " SKIP ", sel(optB)},
		{"skip takes a recommendation in words", recommended, "skip", escalation.Answer{Text: "use whatever is already deployed"}},
		{"skip with nothing recommended takes nothing", choice(""), "skip", noDefault},
		{"skip on a yes/no question with no default", yesNo, "skip", noDefault},
		{"abort", choice(""), "/abort", escalation.Answer{Value: "/abort"}},
		{"abort with reason", choice(""), "/abort   wrong plan, start over ", escalation.Answer{Value: "/abort", Text: "wrong plan, start over"}},
		{"ABORT keeps the reason's case", choice(""), "/ABORT Wrong Plan", escalation.Answer{Value: "/abort", Text: "Wrong Plan"}},
		{"abort glued to a word is text", choice(""), "/abortnow", escalation.Answer{Text: "/abortnow"}},
		{"retry", choice(""), "/retry", escalation.Answer{Value: "/retry"}},
		{"RETRY", free, " /RETRY ", escalation.Answer{Value: "/retry"}},
		{"resume", free, "/resume", escalation.Answer{Value: "/resume"}},
		{"yes", yesNo, "yes", escalation.Answer{Value: escalation.AnswerYes}},
		{"y", yesNo, "Y", escalation.Answer{Value: escalation.AnswerYes}},
		{"no", yesNo, "NO", escalation.Answer{Value: escalation.AnswerNo}},
		{"n", confirm, "n", escalation.Answer{Value: escalation.AnswerNo}},
		{"confirm yes", confirm, "Yes", escalation.Answer{Value: escalation.AnswerYes}},
		{"maybe on a yes/no question", yesNo, "maybe later", escalation.Answer{Text: "maybe later"}},
		{"yes on a multiple-choice question is text", choice(""), "yes", escalation.Answer{Text: "yes"}},
		{"empty", free, "   ", escalation.Answer{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escalation.ParseAnswer(tt.q, tt.line); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseAnswer(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

func TestRequestFor(t *testing.T) {
	e := &jobs.Escalation{ID: "e2", Options: []jobs.Option{optA, optB}}
	base := escalation.Request{RunID: "r-1", EscalationID: "e2", By: "alice", Via: "console"}
	with := func(f func(*escalation.Request)) escalation.Request { r := base; f(&r); return r }
	tests := []struct {
		name   string
		answer escalation.Answer
		want   escalation.Request
		ok     bool
	}{
		{"option", sel(optB), with(func(r *escalation.Request) { r.Type, r.Key = jobs.ResolveChoose, "B" }), true},
		{"text", escalation.Answer{Text: "use sqlite"},
			with(func(r *escalation.Request) { r.Type, r.Text = jobs.ResolveAnswer, "use sqlite" }), true},
		{"abort with reason", escalation.Answer{Value: "/abort", Text: "wrong plan"},
			with(func(r *escalation.Request) { r.Type, r.Reason = jobs.ResolveAbort, "wrong plan" }), true},
		{"abort without reason", escalation.Answer{Value: "/abort"},
			with(func(r *escalation.Request) { r.Type, r.Reason = jobs.ResolveAbort, "aborted by alice" }), true},
		{"retry", escalation.Answer{Value: "/retry"}, with(func(r *escalation.Request) { r.Type = jobs.ResolveRetry }), true},
		{"resume", escalation.Answer{Value: "/resume"}, with(func(r *escalation.Request) { r.Type = jobs.ResolveResume }), true},
		{"yes resumes", escalation.Answer{Value: escalation.AnswerYes}, with(func(r *escalation.Request) { r.Type = jobs.ResolveResume }), true},
		{"no aborts", escalation.Answer{Value: escalation.AnswerNo},
			with(func(r *escalation.Request) { r.Type, r.Reason = jobs.ResolveAbort, "declined by alice" }), true},
		{"skipped", escalation.Answer{Value: escalation.AnswerSkipped}, base, false},
		{"timeout", escalation.Answer{Value: escalation.AnswerTimeout}, base, false},
		{"blank text", escalation.Answer{Text: "  "}, base, false},
		{"nothing", escalation.Answer{}, base, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := escalation.RequestFor(e, "r-1", tt.answer, "alice", "console")
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RequestFor(%+v) = %+v, %v; want %+v, %v", tt.answer, got, ok, tt.want, tt.ok)
			}
			if ok {
				if err := got.Validate(); err != nil {
					t.Errorf("the request does not validate: %v", err)
				}
			}
		})
	}
}

// What a typed line turns into, end to end: ParseAnswer → RequestFor → Resolve.
func TestTypedAnswerResolves(t *testing.T) {
	tests := []struct {
		line   string
		check  func(*jobs.Run) bool
		expect string
	}{
		{"b)", func(r *jobs.Run) bool { return r.Escalations[0].Resolution.Key == "B" }, "chose B"},
		{"skip", func(r *jobs.Run) bool { return r.Escalations[0].Resolution.Key == "B" }, "the recommendation B"},
		{"/abort not today", func(r *jobs.Run) bool { return r.Status == jobs.RunAborted && r.Reason == "not today" }, "aborted"},
		{"/retry", func(r *jobs.Run) bool { return r.Task("T1").Failures == 3 }, "retry, counter kept"},
		{"use the map in cache.go", func(r *jobs.Run) bool {
			return reflect.DeepEqual(r.Task("T1").Guidance, []string{"use the map in cache.go"})
		}, "guidance"},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.line, func(t *testing.T) {
					run := newRun(t, sc)
					e := open(t, sc.store, run.ID, choiceSpec())
					a := escalation.ParseAnswer(escalation.QuestionFor(e), tt.line)
					req, ok := escalation.RequestFor(e, run.ID, a, "alice", "console")
					if !ok {
						t.Fatalf("%q resolves nothing", tt.line)
					}
					if _, _, err := escalation.Resolve(context.Background(), sc.store, &fakeQueue{}, req); err != nil {
						t.Fatal(err)
					}
					if got := mustGet(t, sc.store, run.ID); !tt.check(got) {
						t.Errorf("%q: want %s; resolution %+v", tt.line, tt.expect, got.Escalations[0].Resolution)
					}
				})
			}
		})
	}
}

func TestReadAnswers(t *testing.T) {
	in := "#2 is fine\n\nB\n   \n  /abort not today  \nuse the map\n"
	got, err := escalation.ReadAnswers(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"#2 is fine", "B", "/abort not today", "use the map"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ReadAnswers = %q, want %q", got, want)
	}
	if got, err := escalation.ReadAnswers(strings.NewReader("")); err != nil || len(got) != 0 {
		t.Errorf("empty file: %q, %v", got, err)
	}
	boom := errors.New("disk gone")
	if _, err := escalation.ReadAnswers(io.MultiReader(strings.NewReader("B\n"), iotest{boom})); !errors.Is(err, boom) {
		t.Errorf("read error: %v, want %v", err, boom)
	}
}

type iotest struct{ err error }

func (r iotest) Read([]byte) (int, error) { return 0, r.err }

func TestQueue(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	q := escalation.NewQueue([]string{"b", "/retry", "use the map"}, &out)
	want := []escalation.Answer{sel(optB), {Value: "/retry"}, {Text: "use the map"},
		{Value: escalation.AnswerSkipped}, {Value: escalation.AnswerSkipped}}
	for i, w := range want {
		got, err := q.Ask(ctx, choice(""))
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("answer %d = %+v, %v; want %+v", i, got, err, w)
		}
	}
	wantOut := escalation.Prompt + "b (from the answers file)\n" + escalation.Prompt + "/retry (from the answers file)\n" +
		escalation.Prompt + "use the map (from the answers file)\n"
	if out.String() != wantOut {
		t.Errorf("output =\n%q\nwant\n%q", out.String(), wantOut)
	}

	t.Run("without output", func(t *testing.T) {
		q := escalation.NewQueue([]string{"A"}, nil)
		if got, err := q.Ask(ctx, choice("")); err != nil || !reflect.DeepEqual(got, sel(optA)) {
			t.Errorf("Ask = %+v, %v", got, err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		q := escalation.NewQueue(nil, nil)
		if got, err := q.Ask(ctx, choice("B")); err != nil || got.Value != escalation.AnswerSkipped {
			t.Errorf("Ask = %+v, %v; want SKIPPED", got, err)
		}
	})
}

func TestAutoApprove(t *testing.T) {
	tests := []struct {
		name string
		q    escalation.Question
		want escalation.Answer
	}{
		{"yes/no", escalation.Question{Type: escalation.YesNo}, escalation.Answer{Value: escalation.AnswerYes}},
		{"confirmation", escalation.Question{Type: escalation.Confirmation}, escalation.Answer{Value: escalation.AnswerYes}},
		{"multiple choice with default", choice("c"), sel(optC)},
		{"multiple choice without default", choice(""), sel(optA)},
		{"multiple choice with an unknown default", choice("Z"), sel(optA)},
		{"multiple choice without options", escalation.Question{Type: escalation.MultipleChoice}, escalation.Answer{Text: "auto-approved"}},
		{"freeform", escalation.Question{Type: escalation.Freeform}, escalation.Answer{Text: "auto-approved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := escalation.AutoApprove{}.Ask(context.Background(), tt.q)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Ask = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// console is a Console on a pipe; the pipe is closed when the test ends so that the reader goroutine ends too.
func console(t *testing.T) (*escalation.Console, *io.PipeWriter, *bytes.Buffer) {
	t.Helper()
	pr, pw := io.Pipe()
	var out bytes.Buffer
	c := escalation.NewConsole(pr, &out)
	t.Cleanup(func() { pw.Close() })
	return c, pw, &out
}

// typeLines writes to the console's input without blocking the test.
func typeLines(pw *io.PipeWriter, s string) {
	go func() { io.WriteString(pw, s) }()
}

func TestConsole(t *testing.T) {
	ctx := context.Background()

	t.Run("answers", func(t *testing.T) {
		c, pw, out := console(t)
		typeLines(pw, "b)\n")
		got, err := c.Ask(ctx, choice(""))
		if err != nil || !reflect.DeepEqual(got, sel(optB)) {
			t.Errorf("Ask = %+v, %v; want B", got, err)
		}
		if out.String() != escalation.Prompt {
			t.Errorf("output = %q, want the prompt %q", out.String(), escalation.Prompt)
		}
		typeLines(pw, "/abort not today\n")
		got, err = c.Ask(ctx, choice(""))
		if err != nil || got.Value != "/abort" || got.Text != "not today" {
			t.Errorf("second Ask = %+v, %v", got, err)
		}
	})
	t.Run("skip with nothing to take says so and asks again", func(t *testing.T) {
		c, pw, out := console(t)
		typeLines(pw, "skip\nB\n")
		got, err := c.Ask(ctx, choice(""))
		if err != nil || !reflect.DeepEqual(got, sel(optB)) {
			t.Errorf("Ask = %+v, %v; want B after the refused skip", got, err)
		}
		if !strings.Contains(out.String(), "There is no recommendation to take with 'skip'") || strings.Count(out.String(), escalation.Prompt) != 2 {
			t.Errorf("output = %q, want the reason and the prompt again", out.String())
		}
	})
	t.Run("blank lines prompt again", func(t *testing.T) {
		c, pw, out := console(t)
		typeLines(pw, "\n   \n\t\nuse the map\n")
		got, err := c.Ask(ctx, choice(""))
		if err != nil || got.Text != "use the map" {
			t.Errorf("Ask = %+v, %v", got, err)
		}
		if want := strings.Repeat(escalation.Prompt, 4); out.String() != want {
			t.Errorf("output = %q, want %q", out.String(), want)
		}
	})
	t.Run("echo", func(t *testing.T) {
		c, pw, out := console(t)
		c.Echo = true
		typeLines(pw, "\nb)\n")
		got, err := c.Ask(ctx, choice(""))
		if err != nil || !reflect.DeepEqual(got, sel(optB)) {
			t.Errorf("Ask = %+v, %v; want B", got, err)
		}
		if want := escalation.Prompt + "\n" + escalation.Prompt + "b)\n"; out.String() != want {
			t.Errorf("output = %q, want %q", out.String(), want)
		}
	})
	t.Run("end of input skips", func(t *testing.T) {
		c, pw, out := console(t)
		pw.Close()
		for i := 0; i < 2; i++ {
			got, err := c.Ask(ctx, choice("B"))
			if err != nil || got.Value != escalation.AnswerSkipped {
				t.Errorf("Ask %d = %+v, %v; want SKIPPED", i, got, err)
			}
		}
		if want := strings.Repeat(escalation.Prompt+"\n", 2); out.String() != want {
			t.Errorf("output = %q, want %q", out.String(), want)
		}
	})
	t.Run("settled elsewhere", func(t *testing.T) {
		c, pw, out := console(t)
		actx, cancel := context.WithCancel(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		got, err := c.Ask(actx, choice(""))
		if !errors.Is(err, context.Canceled) || !reflect.DeepEqual(got, escalation.Answer{}) {
			t.Errorf("Ask = %+v, %v; want context.Canceled", got, err)
		}
		if out.String() != escalation.Prompt+"\n" {
			t.Errorf("output = %q", out.String())
		}
		// The line typed next answers the next question: the reader outlives a cancelled question.
		typeLines(pw, "A\n")
		if got, err := c.Ask(ctx, choice("")); err != nil || !reflect.DeepEqual(got, sel(optA)) {
			t.Errorf("next Ask = %+v, %v; want A", got, err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		c, _, _ := console(t)
		actx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.Ask(actx, choice("")); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		c, pw, out := console(t)
		q := choice("B")
		q.Timeout = 20 * time.Millisecond
		got, err := c.Ask(ctx, q)
		if err != nil || got.Value != escalation.AnswerTimeout {
			t.Errorf("Ask = %+v, %v; want TIMEOUT", got, err)
		}
		if out.String() != escalation.Prompt+"\n" {
			t.Errorf("output = %q", out.String())
		}
		typeLines(pw, "c\n")
		q.Timeout = 0
		if got, err := c.Ask(ctx, q); err != nil || !reflect.DeepEqual(got, sel(optC)) {
			t.Errorf("next Ask = %+v, %v; want C", got, err)
		}
	})
	t.Run("questions take turns", func(t *testing.T) {
		c, pw, _ := console(t)
		type res struct {
			a   escalation.Answer
			err error
		}
		results := make(chan res, 2)
		for i := 0; i < 2; i++ {
			go func() {
				a, err := c.Ask(ctx, choice(""))
				results <- res{a, err}
			}()
		}
		typeLines(pw, "A\nB\n")
		got := map[string]bool{}
		for i := 0; i < 2; i++ {
			r := <-results
			if r.err != nil {
				t.Fatal(r.err)
			}
			got[r.a.Value] = true
		}
		if !got["A"] || !got["B"] {
			t.Errorf("answers = %v, want A and B once each", got)
		}
	})
}

func TestRecording(t *testing.T) {
	ctx := context.Background()
	rec := &escalation.Recording{Inner: escalation.NewQueue([]string{"B", "why not sqlite?"}, nil)}
	q1, q2 := choice(""), escalation.Question{Text: "And then?", Type: escalation.Freeform}
	rec.Ask(ctx, q1)
	rec.Ask(ctx, q2)
	want := []escalation.Recorded{{Question: q1, Answer: sel(optB)}, {Question: q2, Answer: escalation.Answer{Text: "why not sqlite?"}}}
	if got := rec.Recordings(); !reflect.DeepEqual(got, want) {
		t.Errorf("Recordings =\n%+v\nwant\n%+v", got, want)
	}
	// The copy is the caller's.
	rec.Recordings()[0].Answer.Value = "changed"
	if rec.Recordings()[0].Answer.Value != "B" {
		t.Error("Recordings returns the recording's own slice")
	}

	t.Run("errors are not recorded", func(t *testing.T) {
		rec := &escalation.Recording{Inner: escalation.Callback(func(ctx context.Context, q escalation.Question) (escalation.Answer, error) {
			return escalation.Answer{}, context.Canceled
		})}
		if _, err := rec.Ask(ctx, q1); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want the inner error", err)
		}
		if n := len(rec.Recordings()); n != 0 {
			t.Errorf("recorded %d failed questions", n)
		}
	})
}

func TestCallback(t *testing.T) {
	var asked escalation.Question
	cb := escalation.Callback(func(ctx context.Context, q escalation.Question) (escalation.Answer, error) {
		asked = q
		return escalation.Answer{Value: "/retry"}, nil
	})
	var iv escalation.Interviewer = cb
	q := choice("A")
	got, err := iv.Ask(context.Background(), q)
	if err != nil || got.Value != "/retry" || !reflect.DeepEqual(asked, q) {
		t.Errorf("Ask = %+v, %v; asked %+v", got, err, asked)
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"B", "b)", "[c]", "a.", "skip", "SKIP", "/abort", "/abort wrong plan", "/ABORT x",
		"/retry", "/resume", "yes", "n", "use the map", "", "   ", "/", "()", "[]", ").:", "é", "İ", "/abortİ"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	e := &jobs.Escalation{ID: "e1", Options: []jobs.Option{optA, optB, optC}, Recommendation: "B"}
	f.Fuzz(func(t *testing.T, line string, yesNo bool) {
		q := escalation.QuestionFor(e)
		if yesNo {
			q = escalation.Question{Text: "ok?", Type: escalation.YesNo, Escalation: &jobs.Escalation{ID: "e1"}}
		}
		a := escalation.ParseAnswer(q, line)
		if a.Selected != nil {
			if a.Value != a.Selected.Key {
				t.Errorf("ParseAnswer(%q) = %+v: value is not the selected key", line, a)
			}
			if _, ok := e.OptionByKey(a.Selected.Key); !ok || yesNo {
				t.Errorf("ParseAnswer(%q) selected %+v, not an option", line, a.Selected)
			}
		}
		req, ok := escalation.RequestFor(q.Escalation, "r-1", a, "fuzz", "console")
		if ok {
			if err := req.Validate(); err != nil {
				t.Errorf("ParseAnswer(%q) = %+v → request %+v that does not validate: %v", line, a, req, err)
			}
		}
	})
}
