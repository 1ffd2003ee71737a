package escalation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

var now = time.Date(2025, 3, 14, 9, 26, 53, 0, time.FixedZone("CET", 3600))

// memRun is a run in memory, for what Open does without a store.
func memRun() (*jobs.Run, *jobs.Task) {
	t := &jobs.Task{ID: "T1", Title: "Add a cache", Status: jobs.TaskRunning, Started: 2, Failures: 2,
		Errors: []string{"boom 1", "boom 2"}}
	return &jobs.Run{ID: "r-test", Status: jobs.RunRunning, Tasks: []*jobs.Task{t}}, t
}

func TestOpenParksTheRun(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			run := newRun(t, sc)
			e := open(t, sc.store, run.ID, choiceSpec())

			got := mustGet(t, sc.store, run.ID)
			if got.Status != jobs.RunParked {
				t.Errorf("run status = %s, want parked", got.Status)
			}
			if st := got.Task("T1").Status; st != jobs.TaskWaiting {
				t.Errorf("task status = %s, want waiting", st)
			}
			if st := got.Task("T2").Status; st != jobs.TaskPending {
				t.Errorf("other task status = %s, want pending (untouched)", st)
			}
			if len(got.Escalations) != 1 {
				t.Fatalf("stored escalations = %d, want 1", len(got.Escalations))
			}
			stored := got.Escalations[0]
			if !reflect.DeepEqual(stored, e) {
				t.Errorf("stored escalation differs from the one Open returned:\nstored %+v\nopened %+v", stored, e)
			}
			if got.OpenEscalation() == nil || got.OpenEscalation().ID != "e1" {
				t.Errorf("OpenEscalation() = %+v, want e1", got.OpenEscalation())
			}
			want := jobs.Escalation{
				ID: "e1", TaskID: "T1", Trigger: jobs.TriggerNeedsHelp, Source: "agent",
				Question: "Which cache backend should I use?",
				Options: []jobs.Option{{Key: "A", Label: "Redis"}, {Key: "B", Label: "In-memory"},
					{Key: "C", Label: "Postgres"}},
				Recommendation: "B", Attempt: 3, Failures: 3, Errors: []string{"boom 1", "boom 2", "boom 3"},
				Output:    "I looked at the code. Which cache backend should I use?",
				CreatedAt: sc.clock.Now().UTC(),
				Priority:  jobs.TriggerNeedsHelp.Priority(), TaskStatus: string(jobs.TaskRunning),
				EventRef: evs0(t, sc.store, run.ID),
			}
			stored.Suggestions = nil // checked in TestOpenSuggestions
			if !reflect.DeepEqual(*stored, want) {
				t.Errorf("escalation =\n%+v\nwant\n%+v", *stored, want)
			}

			evs := events(t, sc.store, run.ID, jobs.EscalationEvent{}.Kind())
			if len(evs) != 1 {
				t.Fatalf("escalation events = %d, want 1", len(evs))
			}
			ev := evs[0]
			b := ev.Body.(jobs.EscalationEvent)
			if b.EscalationID != "e1" || b.Trigger != jobs.TriggerNeedsHelp || b.Source != "agent" ||
				b.Question != "Which cache backend should I use?" || b.Recommendation != "B" || b.Title != "Add a cache" {
				t.Errorf("escalation event = %+v", b)
			}
			if ev.TaskID != "T1" || ev.RunID != run.ID || b.Attempt != 3 || b.Failures != 3 {
				t.Errorf("event = %+v", ev)
			}

			au, err := sc.store.Audit(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantAudit := jobs.AuditEntry{RunID: run.ID, TaskID: "T1", EscalationID: "e1", Action: "escalated",
				Trigger: jobs.TriggerNeedsHelp, Detail: "Which cache backend should I use?", By: "orch", Via: "agent"}
			if len(au) != 1 {
				t.Fatalf("audit = %+v, want one entry", au)
			}
			au[0].Time = time.Time{}
			if au[0] != wantAudit {
				t.Errorf("audit entry =\n%+v\nwant\n%+v", au[0], wantAudit)
			}
		})
	}
}

func TestOpenNumbersEscalations(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			run := newRun(t, sc)
			q := &fakeQueue{}
			for i, trig := range []jobs.Trigger{jobs.TriggerNeedsHelp, jobs.TriggerAttemptCap, jobs.TriggerSecurity} {
				e := open(t, sc.store, run.ID, escalation.Spec{Trigger: trig, Source: "orch", Question: "q"})
				if want := fmt.Sprintf("e%d", i+1); e.ID != want {
					t.Fatalf("escalation %d has id %s, want %s", i+1, e.ID, want)
				}
				if _, _, err := escalation.Resolve(ctx, sc.store, q,
					escalation.Request{RunID: run.ID, Type: jobs.ResolveResume, By: "alice", Via: "cli"}); err != nil {
					t.Fatal(err)
				}
				sc.clock.Advance(time.Minute)
			}
			got := mustGet(t, sc.store, run.ID)
			if len(got.Escalations) != 3 || got.OpenEscalation() != nil {
				t.Errorf("escalations = %d, open = %v; want 3 resolved", len(got.Escalations), got.OpenEscalation())
			}
			if n := len(audit(t, sc.store, run.ID)); n != 6 {
				t.Errorf("audit entries = %d, want 3 escalated + 3 resolved", n)
			}
		})
	}
}

func TestOpenCollapsesDuplicateTriggers(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			run := newRun(t, sc)
			first := open(t, sc.store, run.ID, choiceSpec())
			sc.clock.Advance(time.Second)
			// The same task trips again (a redelivered step, the brain and the cap at once): no second question.
			for _, spec := range []escalation.Spec{choiceSpec(),
				{Trigger: jobs.TriggerAttemptCap, Source: "orch", Question: "Task T1 failed 3 times"}} {
				again := open(t, sc.store, run.ID, spec)
				if again.ID != first.ID || again.Question != first.Question || !again.CreatedAt.Equal(first.CreatedAt) {
					t.Errorf("duplicate trigger opened %+v, want the open %+v", again, first)
				}
			}
			got := mustGet(t, sc.store, run.ID)
			if len(got.Escalations) != 1 {
				t.Errorf("escalations = %d, want 1", len(got.Escalations))
			}
			if n := len(events(t, sc.store, run.ID, jobs.EscalationEvent{}.Kind())); n != 1 {
				t.Errorf("escalation events = %d, want 1", n)
			}
			if n := len(audit(t, sc.store, run.ID)); n != 1 {
				t.Errorf("audit entries = %d, want 1", n)
			}
		})
	}

	t.Run("in one change", func(t *testing.T) {
		r, task := memRun()
		var c jobs.Change
		a := escalation.Open(r, task, &c, choiceSpec(), now)
		b := escalation.Open(r, task, &c, escalation.Spec{Trigger: jobs.TriggerBrain, Question: "other"}, now)
		if a != b || len(r.Escalations) != 1 || len(c.Events) != 1 || len(c.Audit) != 1 {
			t.Errorf("a=%p b=%p escalations=%d events=%d audit=%d; want one of each", a, b, len(r.Escalations),
				len(c.Events), len(c.Audit))
		}
	})
}

func TestOpenDefaults(t *testing.T) {
	r, task := memRun()
	var c jobs.Change
	e := escalation.Open(r, task, &c, escalation.Spec{Trigger: jobs.TriggerPermanent, Source: "brain",
		Question: "  \n "}, now)
	if want := "Task T1 needs a decision. Please review and advise."; e.Question != want {
		t.Errorf("question = %q, want %q", e.Question, want)
	}
	if !e.CreatedAt.Equal(now) || e.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want %v in UTC", e.CreatedAt, now.UTC())
	}
	if e.Attempt != 2 || e.Failures != 2 || !reflect.DeepEqual(e.Errors, []string{"boom 1", "boom 2"}) {
		t.Errorf("attempt/failures/errors = %d/%d/%q, want the task's history", e.Attempt, e.Failures, e.Errors)
	}
	if len(e.Options) != 0 || e.Recommendation != "" {
		t.Errorf("options/recommendation = %v/%q, want none", e.Options, e.Recommendation)
	}
}

func TestOpenSuggestions(t *testing.T) {
	tests := []struct {
		trigger jobs.Trigger
		options []string
		want    []string // substrings that some suggestion must contain
	}{
		{jobs.TriggerNeedsHelp, []string{"A) x", "B) y"}, []string{"--choose", "--answer"}},
		{jobs.TriggerNeedsHelp, nil, []string{"--answer"}},
		{jobs.TriggerBrain, nil, []string{"--answer"}},
		{jobs.TriggerAttemptCap, nil, []string{"--resume", "--answer"}},
		{jobs.TriggerPermanent, nil, []string{"--resume"}},
		{jobs.TriggerSecurity, nil, []string{"rotate", "--abort", "--acknowledge-risk"}},
		{jobs.TriggerConfig, nil, []string{"--resume", "--abort"}},
		{jobs.TriggerValidation, nil, []string{"--resume", "--abort"}},
		{jobs.TriggerCustom, nil, []string{"--resume", "--abort"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d options", tt.trigger, len(tt.options)), func(t *testing.T) {
			r, task := memRun()
			e := escalation.Open(r, task, &jobs.Change{}, escalation.Spec{Trigger: tt.trigger, Options: tt.options}, now)
			all := strings.Join(e.Suggestions, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("suggestions %q lack %q", e.Suggestions, w)
				}
			}
			if tt.trigger == jobs.TriggerNeedsHelp && len(tt.options) == 0 && strings.Contains(all, "--choose") {
				t.Errorf("suggestions %q offer --choose without options", e.Suggestions)
			}
		})
	}
	t.Run("given suggestions are kept", func(t *testing.T) {
		r, task := memRun()
		given := []string{"check the VPN"}
		e := escalation.Open(r, task, &jobs.Change{}, escalation.Spec{Trigger: jobs.TriggerConfig, Suggestions: given}, now)
		if !reflect.DeepEqual(e.Suggestions, given) {
			t.Errorf("suggestions = %q, want %q", e.Suggestions, given)
		}
	})
}

func TestOptions(t *testing.T) {
	opt := func(kv ...string) []jobs.Option {
		var o []jobs.Option
		for i := 0; i < len(kv); i += 2 {
			o = append(o, jobs.Option{Key: kv[i], Label: kv[i+1]})
		}
		return o
	}
	tests := []struct {
		name string
		raw  []string
		want []jobs.Option
	}{
		{"parenthesis", []string{"A) Redis", "B) In-memory"}, opt("A", "Redis", "B", "In-memory")},
		{"brackets", []string{"[A] Redis", "[B] x"}, opt("A", "Redis", "B", "x")},
		{"dot", []string{"A. Redis", "C. y"}, opt("A", "Redis", "C", "y")},
		{"colon", []string{"A: Redis"}, opt("A", "Redis")},
		{"dash", []string{"A - Redis", "B - Postgres"}, opt("A", "Redis", "B", "Postgres")},
		{"digits", []string{"1) z", "2) w", "10) v"}, opt("1", "z", "2", "w", "10", "v")},
		{"lower case keys", []string{"a) Redis", "b) Postgres"}, opt("A", "Redis", "B", "Postgres")},
		{"plain strings get letters", []string{"Redis", "In-memory", "Postgres"},
			opt("A", "Redis", "B", "In-memory", "C", "Postgres")},
		{"whitespace trimmed, blanks dropped", []string{"  A)   Redis  ", "", "   "}, opt("A", "Redis")},
		{"duplicate keys reassigned", []string{"A) Redis", "A) Postgres"}, opt("A", "Redis", "B", "A) Postgres")},
		{"duplicate keys ignore case", []string{"a) Redis", "A) Postgres"}, opt("A", "Redis", "B", "A) Postgres")},
		{"plain after keyed takes a free letter", []string{"B) In-memory", "Redis"}, opt("B", "In-memory", "C", "Redis")},
		{"keyed after plain", []string{"Redis", "A) Postgres"}, opt("A", "Redis", "B", "A) Postgres")},
		{"not a key", []string{"Redis: fast", "Use the in-memory map"},
			opt("A", "Redis: fast", "B", "Use the in-memory map")},
		{"none", nil, []jobs.Option{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escalation.Options(tt.raw); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Options(%q) =\n%v\nwant\n%v", tt.raw, got, tt.want)
			}
		})
	}
}

// An agent that lists more than 26 unkeyed options must not hang the worker inside its Redis transaction.
func TestOptionsManyPlainStringsTerminate(t *testing.T) {
	raw := make([]string, 30)
	for i := range raw {
		raw[i] = fmt.Sprintf("approach number %d", i+1)
	}
	done := make(chan []jobs.Option, 1)
	go func() { done <- escalation.Options(raw) }() // leaks a spinning goroutine if Options never returns
	select {
	case got := <-done:
		keys := map[string]bool{}
		for _, o := range got {
			if o.Key == "" || keys[o.Key] {
				t.Errorf("option %+v: empty or duplicate key", o)
			}
			keys[o.Key] = true
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Options did not return for 30 plain options (all 26 letters used: nextKey loops forever)")
	}
}

func TestOpenRecommendation(t *testing.T) {
	ghp := "ghp_" + strings.Repeat("a1B2", 9)
	tests := []struct {
		rec  string
		want string
	}{
		{"B", "B"},
		{"b", "B"},
		{" B ", "B"},
		{"B for simplicity", "B"},
		{"b) in-memory", "B"},
		{"B) In-memory, because the data is small", "B"},
		{"B. It is simplest", "B"},
		{"(B) in-memory", "B"},
		{"[C] Postgres", "C"},
		{"**A**", "A"},
		{"In-memory", "B"},
		{"in-memory", "B"},
		{"postgres", "C"},
		{"Use whichever is faster", "Use whichever is faster"},
		{"D", "D"},
		{"", ""},
		{"B, and keep " + ghp + " out of the repo", "B"},
		{"keep the token " + ghp, "keep the token [REDACTED:github-token]"},
	}
	for _, tt := range tests {
		t.Run(tt.rec, func(t *testing.T) {
			r, task := memRun()
			spec := choiceSpec()
			spec.Recommendation = tt.rec
			e := escalation.Open(r, task, &jobs.Change{}, spec, now)
			if e.Recommendation != tt.want {
				t.Errorf("recommendation %q → %q, want %q", tt.rec, e.Recommendation, tt.want)
			}
			q := escalation.QuestionFor(e)
			if _, isKey := e.OptionByKey(tt.want); isKey && q.Default != tt.want {
				t.Errorf("question default = %q, want %q", q.Default, tt.want)
			}
		})
	}
}

func TestOpenRedactsAndBoundsContext(t *testing.T) {
	secret := "sk_live_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 1)
	pw := "Tr0ub4dor&3xyz"
	big := func(n int, middle string) string {
		head := "head " + secret + " "
		tail := " password=" + pw + " tail"
		return head + strings.Repeat("x", n/2) + middle + strings.Repeat("y", n/2) + tail
	}
	r, task := memRun()
	task.Errors = nil
	for i := 1; i <= escalation.MaxErrors+5; i++ {
		task.Errors = append(task.Errors, fmt.Sprintf("error %d: ", i)+big(10<<10, "é"))
	}
	var c jobs.Change
	e := escalation.Open(r, task, &c, escalation.Spec{
		Trigger: jobs.TriggerAttemptCap, Source: "orch",
		Question:       big(20<<10, "日本語"),
		Error:          big(10<<10, "🙂"),
		Output:         big(100<<10, "日本語🙂é"),
		Recommendation: "rotate " + secret,
	}, now)

	fields := []struct {
		name  string
		value string
		limit int
	}{
		{"question", e.Question, escalation.MaxQuestion},
		{"error", e.Error, escalation.MaxError},
		{"output", e.Output, escalation.MaxOutput},
	}
	for i, s := range e.Errors {
		fields = append(fields, struct {
			name  string
			value string
			limit int
		}{fmt.Sprintf("errors[%d]", i), s, escalation.MaxError})
	}
	if data, _ := json.Marshal(e); len(data) > escalation.MaxStored {
		t.Errorf("escalation is %d bytes stored, limit %d", len(data), escalation.MaxStored)
	}
	for _, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			if len(f.value) > f.limit {
				t.Errorf("%d bytes, limit %d", len(f.value), f.limit)
			}
			// The output gives way first when the whole escalation would pass MaxStored.
			if len(f.value) < f.limit-utf8.UTFMax*2 && f.name != "output" {
				t.Errorf("%d bytes: cut more than needed for the limit %d", len(f.value), f.limit)
			}
			if !utf8.ValidString(f.value) {
				t.Error("not valid UTF-8")
			}
			if !strings.Contains(f.value, "bytes cut]") {
				t.Error("no cut marker")
			}
			if strings.Contains(f.value, secret) || strings.Contains(f.value, pw) {
				t.Error("a secret survived")
			}
			if !strings.HasSuffix(f.value, " tail") || !strings.Contains(f.value, "head ") {
				t.Errorf("head or tail lost: %.40q…%q", f.value, f.value[max(0, len(f.value)-40):])
			}
		})
	}
	if len(e.Errors) != escalation.MaxErrors || !strings.HasPrefix(e.Errors[0], "error 6: ") ||
		!strings.HasPrefix(e.Errors[escalation.MaxErrors-1], fmt.Sprintf("error %d: ", escalation.MaxErrors+5)) {
		t.Errorf("errors kept: %d, want the last %d", len(e.Errors), escalation.MaxErrors)
	}
	if strings.Contains(e.Recommendation, secret) {
		t.Errorf("recommendation %q keeps the secret", e.Recommendation)
	}
	data, _ := json.Marshal(c)
	if strings.Contains(string(data), secret) || strings.Contains(string(data), pw) {
		t.Error("the escalation event or audit entry carries a secret")
	}
}

// Options are the agent's words too: they reach Redis, the event log, the terminal and Slack.
func TestOpenRedactsAndBoundsOptions(t *testing.T) {
	secret := "xoxb-" + "123456789012-1234567890123-" + strings.Repeat("AbCd", 6)
	t.Run("redacted", func(t *testing.T) {
		r, task := memRun()
		var c jobs.Change
		e := escalation.Open(r, task, &c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: "Which token?", Options: []string{"A) use " + secret, "B) ask for a new one"}}, now)
		data, _ := json.Marshal(struct {
			E *jobs.Escalation
			C jobs.Change
		}{e, c})
		if strings.Contains(string(data), secret) {
			t.Errorf("an option label keeps a secret: %+v", e.Options)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		r, task := memRun()
		var raw []string
		for i := 0; i < 10; i++ { // 10 × 100 KB
			raw = append(raw, fmt.Sprintf("%c) ", 'A'+i)+strings.Repeat("very long option ", 6000))
		}
		e := escalation.Open(r, task, &jobs.Change{}, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: "Which?", Options: raw, Recommendation: strings.Repeat("because ", 20000)}, now)
		data, _ := json.Marshal(e)
		if len(data) >= 1<<20 {
			t.Errorf("escalation is %d bytes; the context must stay under 1 MB (NFR-041c-08)", len(data))
		}
	})
}

// evs0 is the stream id of a run's first escalation event.
func evs0(t *testing.T, store *store.Store, runID string) string {
	t.Helper()
	evs := events(t, store, runID, jobs.EscalationEvent{}.Kind())
	if len(evs) == 0 {
		return ""
	}
	return evs[0].ID
}
