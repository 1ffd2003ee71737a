package escalation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The tests of this file cover the escalations a pipeline asks by design: a human gate (TriggerGate), whose
// options are the gate's choices with their keys fixed already, and an interactive node's turn (TriggerChat), whose
// options are the commands that end the conversation.

var (
	gateApprove = jobs.Option{Key: "A", Label: "Approve"}
	gateReject  = jobs.Option{Key: "R", Label: "Reject"}
)

// gateSpec is a pipeline's human gate with two choices, a default choice for timeouts and its own time limit.
func gateSpec() escalation.Spec {
	return escalation.Spec{Trigger: jobs.TriggerGate, Source: "pipeline", Question: "Ship the release?",
		Keyed: []jobs.Option{gateApprove, gateReject}, Default: "R", Timeout: 30 * time.Minute}
}

// chatSpec is an interactive node's turn: the agent said something, the human answers.
func chatSpec() escalation.Spec {
	text := "I drafted the schema.\nAnything to change?"
	return escalation.Spec{Trigger: jobs.TriggerChat, Source: "agent", Question: text, Keyed: escalation.ChatOptions(),
		Output: text}
}

// resolveMem resolves an escalation in memory, as Resolve would have.
func resolveMem(e *jobs.Escalation) {
	res := &jobs.Resolution{Type: jobs.ResolveResume, By: "alice", Via: "cli", At: now}
	if len(e.Options) > 0 {
		res.Type, res.Key = jobs.ResolveChoose, e.Options[0].Key
	}
	e.Resolution = res
}

func TestTriggerConversational(t *testing.T) {
	for trig, want := range map[jobs.Trigger]bool{
		jobs.TriggerGate: true, jobs.TriggerChat: true,
		jobs.TriggerLoop: false, jobs.TriggerNeedsHelp: false, jobs.TriggerBrain: false, jobs.TriggerAttemptCap: false,
		jobs.TriggerPermanent: false, jobs.TriggerSecurity: false, jobs.TriggerConfig: false,
		jobs.TriggerValidation: false, jobs.TriggerCustom: false,
	} {
		if got := trig.Conversational(); got != want {
			t.Errorf("%s.Conversational() = %v, want %v", trig, got, want)
		}
	}
}

func TestOpenKeyedKeepsKeys(t *testing.T) {
	tests := []struct {
		name  string
		keyed []jobs.Option
	}{
		{"gate choices", []jobs.Option{gateApprove, gateReject}},
		{"chat commands", escalation.ChatOptions()},
		// Keys an agent's option parser would uppercase, reassign or drop are kept as they are.
		{"any keys", []jobs.Option{{Key: "y", Label: "Yes"}, {Key: "retry", Label: "Try again"},
			{Key: "A", Label: "Also A"}, {Key: "[x]", Label: "Odd"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, task := memRun()
			e := escalation.Open(r, task, &jobs.Change{}, escalation.Spec{Trigger: jobs.TriggerGate, Source: "pipeline",
				Question: "Which way?", Keyed: tt.keyed,
				Options: []string{"A) an agent's option that Keyed replaces"}}, now)
			if e == nil {
				t.Fatal("Open returned nil")
			}
			if !reflect.DeepEqual(e.Options, tt.keyed) {
				t.Errorf("options = %+v, want exactly %+v", e.Options, tt.keyed)
			}
		})
	}
	t.Run("keyed does not alias the spec", func(t *testing.T) {
		r, task := memRun()
		keyed := []jobs.Option{gateApprove, gateReject}
		e := escalation.Open(r, task, &jobs.Change{}, escalation.Spec{Trigger: jobs.TriggerGate, Keyed: keyed}, now)
		keyed[0].Label = "changed later"
		if e.Options[0].Label != "Approve" {
			t.Errorf("the escalation shares the spec's slice: label %q", e.Options[0].Label)
		}
	})
}

func TestOpenKeyedRedactsAndBoundsLabels(t *testing.T) {
	secret := "xoxb-" + "123456789012-1234567890123-" + strings.Repeat("AbCd", 6)
	long := strings.Repeat("a very long gate label ", 3000) + "end"
	r, task := memRun()
	var c jobs.Change
	e := escalation.Open(r, task, &c, escalation.Spec{Trigger: jobs.TriggerGate, Source: "pipeline", Question: "Which?",
		Keyed: []jobs.Option{{Key: "S", Label: "send with " + secret}, {Key: "L", Label: long}}}, now)
	if e == nil {
		t.Fatal("Open returned nil")
	}
	if e.Options[0].Key != "S" || e.Options[1].Key != "L" {
		t.Fatalf("keys = %+v, want S, L", e.Options)
	}
	if strings.Contains(e.Options[0].Label, secret) || !strings.HasPrefix(e.Options[0].Label, "send with ") {
		t.Errorf("label 0 = %q: want the secret redacted, the rest kept", e.Options[0].Label)
	}
	if data, _ := json.Marshal(c); strings.Contains(string(data), secret) {
		t.Errorf("the escalation event or audit entry carries the secret")
	}
	got := e.Options[1].Label
	if len(got) >= 1024 || !strings.Contains(got, "bytes cut") {
		t.Errorf("long label is %d bytes (%.60q…): want it bounded with a cut marker", len(got), got)
	}
	// Keyed labels are bounded exactly as the labels of an agent's options are.
	if want := escalation.Options([]string{"L) " + long})[0].Label; got != want {
		t.Errorf("keyed label bounded to %d bytes, an agent's option to %d", len(got), len(want))
	}
}

func TestOpenStoresDefaultAndTimeout(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		r, task := memRun()
		e := escalation.Open(r, task, &jobs.Change{}, gateSpec(), now)
		if e.Default != "R" || e.Timeout != 30*time.Minute {
			t.Errorf("default, timeout = %q, %v; want R, 30m", e.Default, e.Timeout)
		}
		if e.Trigger != jobs.TriggerGate || e.Source != "pipeline" || e.Question != "Ship the release?" {
			t.Errorf("escalation = %+v", e)
		}
	})
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			run := newRun(t, sc)
			open(t, sc.store, run.ID, gateSpec())
			e := mustGet(t, sc.store, run.ID).OpenEscalation()
			if e == nil {
				t.Fatal("no open escalation")
			}
			if e.Default != "R" || e.Timeout != 30*time.Minute {
				t.Errorf("stored default, timeout = %q, %v; want R, 30m", e.Default, e.Timeout)
			}
			if !reflect.DeepEqual(e.Options, []jobs.Option{gateApprove, gateReject}) {
				t.Errorf("stored options = %+v", e.Options)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		r, task := memRun()
		e := escalation.Open(r, task, &jobs.Change{}, chatSpec(), now)
		if e.Default != "" || e.Timeout != 0 {
			t.Errorf("default, timeout = %q, %v; want none", e.Default, e.Timeout)
		}
	})
}

func TestConversationalEscalationsDoNotCountAgainstTheCap(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec func() escalation.Spec
		max  int // the spec's MaxPerTask; 0 is DefaultMaxPerTask (5)
	}{
		{"gate", gateSpec, 5},
		{"chat", chatSpec, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, task := memRun()
			n := 0
			openOne := func(s escalation.Spec) *jobs.Escalation {
				t.Helper()
				s.MaxPerTask = tt.max
				e := escalation.Open(r, task, &jobs.Change{}, s, now)
				if e != nil {
					n++
					if want := fmt.Sprintf("e%d", n); e.ID != want {
						t.Fatalf("escalation id = %s, want %s", e.ID, want)
					}
				}
				return e
			}
			// Seven resolved ones, more than the cap of five, and an eighth still opens.
			for i := 1; i <= 8; i++ {
				e := openOne(tt.spec())
				if e == nil {
					t.Fatalf("%s %d: Open returned nil (run %s: %s)", tt.name, i, r.Status, r.Reason)
				}
				if r.Status != jobs.RunParked || task.Status != jobs.TaskWaiting {
					t.Fatalf("%s %d: run %s, task %s; want parked, waiting", tt.name, i, r.Status, task.Status)
				}
				resolveMem(e)
			}
			// They left the whole cap to ordinary escalations: five open, the sixth ends the run.
			for i := 1; i <= escalation.DefaultMaxPerTask; i++ {
				e := openOne(choiceSpec())
				if e == nil {
					t.Fatalf("needs_help %d after %d %s escalations: Open returned nil (%s)", i, 8, tt.name, r.Reason)
				}
				resolveMem(e)
			}
			if e := openOne(choiceSpec()); e != nil {
				t.Fatalf("needs_help %d opened %s; want the escalation cap to end the run", escalation.DefaultMaxPerTask+1, e.ID)
			}
			if r.Status != jobs.RunFailed || task.Status != jobs.TaskFailed {
				t.Errorf("run %s, task %s; want failed, failed", r.Status, task.Status)
			}
			if want := "needed a human 5 times (limit 5)"; !strings.Contains(r.Reason, want) {
				t.Errorf("reason = %q, want it to say %q", r.Reason, want)
			}
		})
	}
}

func TestOrdinaryEscalationsStillHitTheCap(t *testing.T) {
	t.Run("needs_help", func(t *testing.T) {
		r, task := memRun()
		for i := 1; i <= 5; i++ {
			s := choiceSpec()
			s.MaxPerTask = 5
			e := escalation.Open(r, task, &jobs.Change{}, s, now)
			if e == nil {
				t.Fatalf("escalation %d: Open returned nil", i)
			}
			resolveMem(e)
		}
		s := choiceSpec()
		s.MaxPerTask = 5
		if e := escalation.Open(r, task, &jobs.Change{}, s, now); e != nil {
			t.Fatalf("the sixth escalation opened %s; want the cap", e.ID)
		}
		if r.Status != jobs.RunFailed || !strings.Contains(r.Reason, "escalation loop") {
			t.Errorf("run %s: %q; want failed by the escalation loop", r.Status, r.Reason)
		}
	})
	t.Run("loop triggers count", func(t *testing.T) {
		r, task := memRun()
		for i := 1; i <= 3; i++ {
			e := escalation.Open(r, task, &jobs.Change{}, escalation.Spec{Trigger: jobs.TriggerLoop, Source: "orch",
				Question: "LOOP DETECTED", MaxPerTask: 3}, now)
			if e == nil {
				t.Fatalf("loop %d: Open returned nil", i)
			}
			resolveMem(e)
		}
		s := choiceSpec()
		s.MaxPerTask = 3
		if e := escalation.Open(r, task, &jobs.Change{}, s, now); e != nil || r.Status != jobs.RunFailed {
			t.Errorf("after 3 loop escalations (limit 3): opened %v, run %s; want the cap", e, r.Status)
		}
	})
	t.Run("gates in between change nothing", func(t *testing.T) {
		r, task := memRun()
		for i := 1; i <= 4; i++ {
			for _, s := range []escalation.Spec{choiceSpec(), gateSpec(), chatSpec()} {
				s.MaxPerTask = 4
				e := escalation.Open(r, task, &jobs.Change{}, s, now)
				if e == nil {
					t.Fatalf("round %d, %s: Open returned nil (%s)", i, s.Trigger, r.Reason)
				}
				resolveMem(e)
			}
		}
		s := choiceSpec()
		s.MaxPerTask = 4
		if e := escalation.Open(r, task, &jobs.Change{}, s, now); e != nil || r.Status != jobs.RunFailed {
			t.Fatalf("fifth needs_help (limit 4): opened %v, run %s; want the cap", e, r.Status)
		}
		if !strings.Contains(r.Reason, "needed a human 4 times (limit 4)") {
			t.Errorf("reason = %q: gates and chats must not be counted", r.Reason)
		}
	})
	t.Run("a gate is asked even after the cap's worth of ordinary escalations", func(t *testing.T) {
		r, task := memRun()
		for i := 1; i <= 2; i++ {
			s := choiceSpec()
			s.MaxPerTask = 2
			resolveMem(escalation.Open(r, task, &jobs.Change{}, s, now))
		}
		s := gateSpec()
		s.MaxPerTask = 2
		if e := escalation.Open(r, task, &jobs.Change{}, s, now); e == nil || r.Status != jobs.RunParked {
			t.Errorf("gate after 2 ordinary escalations (limit 2): opened %v, run %s (%s)", e, r.Status, r.Reason)
		}
	})
}

// Through the store, as a pipeline does it: a gate asked and answered seven times at the same node.
func TestGateResolvedManyTimesStillOpens(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			run := newRun(t, sc)
			q := &fakeQueue{}
			for i := 1; i <= 8; i++ {
				s := gateSpec()
				s.MaxPerTask = 5
				e := open(t, sc.store, run.ID, s)
				if e == nil {
					got := mustGet(t, sc.store, run.ID)
					t.Fatalf("gate %d: Open returned nil (run %s: %s)", i, got.Status, got.Reason)
				}
				if want := fmt.Sprintf("e%d", i); e.ID != want {
					t.Fatalf("gate %d has id %s, want %s", i, e.ID, want)
				}
				if i == 8 {
					break
				}
				if _, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID,
					EscalationID: e.ID, Type: jobs.ResolveChoose, Key: "A", By: "alice", Via: "cli"}); err != nil {
					t.Fatalf("resolving gate %d: %v", i, err)
				}
				sc.clock.Advance(time.Minute)
			}
			got := mustGet(t, sc.store, run.ID)
			if got.Status != jobs.RunParked || got.OpenEscalation() == nil || got.OpenEscalation().ID != "e8" {
				t.Errorf("run %s (%s), open %+v; want parked on e8", got.Status, got.Reason, got.OpenEscalation())
			}
		})
	}
}

// resolvedCase is the outcome of one accepted resolution of a gate or a chat turn.
type resolvedCase struct {
	name     string
	req      escalation.Request
	typ      jobs.ResolutionType
	key      string
	text     string
	describe string
}

// checkConversationalResolved checks an accepted resolution of a gate or chat: resolved as wanted, described, and
// with the task untouched (apply is skipped; the resume applies the answer) unless it aborted the run.
func checkConversationalResolved(t *testing.T, sc storeCase, spec func() escalation.Spec, tt resolvedCase) {
	t.Helper()
	ctx := context.Background()
	run := newRun(t, sc)
	opened := open(t, sc.store, run.ID, spec())
	sc.clock.Advance(time.Minute)
	q := &fakeQueue{}
	req := tt.req
	req.RunID, req.By = run.ID, "alice"
	if req.Via == "" {
		req.Via = "cli"
	}
	_, esc, err := escalation.Resolve(ctx, sc.store, q, req)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if esc == nil || esc.ID != opened.ID {
		t.Fatalf("resolved %+v, want %s", esc, opened.ID)
	}
	stored := mustGet(t, sc.store, run.ID)
	res := stored.Escalations[0].Resolution
	if res == nil {
		t.Fatal("no resolution stored")
	}
	if res.Type != tt.typ || res.Key != tt.key || res.Text != tt.text {
		t.Errorf("resolution type/key/text = %s/%q/%q, want %s/%q/%q", res.Type, res.Key, res.Text, tt.typ, tt.key, tt.text)
	}
	if got := escalation.Describe(stored.Escalations[0], res); got != tt.describe {
		t.Errorf("Describe = %q, want %q", got, tt.describe)
	}
	evs := events(t, sc.store, run.ID, jobs.ResolutionEvent{}.Kind())
	if len(evs) != 1 || evs[0].Body.(jobs.ResolutionEvent).Summary != tt.describe || evs[0].Body.(jobs.ResolutionEvent).Resolution != tt.typ {
		t.Errorf("resolution events = %+v; want one with summary %q", evs, tt.describe)
	}
	var resolved []jobs.AuditEntry
	for _, a := range audit(t, sc.store, run.ID) {
		if a.Action == "resolved" {
			resolved = append(resolved, a)
		}
	}
	if len(resolved) != 1 || resolved[0].Detail != tt.describe || resolved[0].Resolution != string(tt.typ) {
		t.Errorf("resolved audit entries = %+v; want one saying %q", resolved, tt.describe)
	}
	if got := q.Calls(); !reflect.DeepEqual(got, []resumeCall{{run.ID, "e1"}}) {
		t.Errorf("resumes enqueued = %v, want one for e1", got)
	}

	task := stored.Task("T1")
	if tt.typ == jobs.ResolveAbort {
		if stored.Status != jobs.RunAborted || task.Status != jobs.TaskFailed || stored.Reason != tt.req.Reason {
			t.Errorf("run %s (%q), task %s; want aborted (%q), failed", stored.Status, stored.Reason, task.Status,
				tt.req.Reason)
		}
		if ab := events(t, sc.store, run.ID, jobs.RunAbortedEvent{}.Kind()); len(ab) != 1 {
			t.Errorf("run_aborted events = %d, want 1", len(ab))
		}
		return
	}
	if stored.Status != jobs.RunParked {
		t.Errorf("run status = %s, want parked until the resume", stored.Status)
	}
	// apply is skipped: no guidance, no counter reset, the task as the escalation left it.
	if task.Status != jobs.TaskWaiting {
		t.Errorf("task status = %s, want waiting (the resume applies the answer)", task.Status)
	}
	if len(task.Guidance) != 0 {
		t.Errorf("guidance = %q, want none from a %s", task.Guidance, opened.Trigger)
	}
	if task.Failures != 3 || len(task.Errors) != 3 || task.RetryGuidance != "try a smaller change" {
		t.Errorf("failures/errors/retry guidance = %d/%d/%q; want the counters kept (3/3/%q)", task.Failures,
			len(task.Errors), task.RetryGuidance, "try a smaller change")
	}
}

// checkConversationalRejected checks that a resolution is ErrInvalid, says so usefully and changes nothing.
func checkConversationalRejected(t *testing.T, sc storeCase, spec func() escalation.Spec, req escalation.Request, msgs []string) {
	t.Helper()
	run := newRun(t, sc)
	open(t, sc.store, run.ID, spec())
	before := snap(t, sc.store, run.ID)
	sc.clock.Advance(time.Minute)
	q := &fakeQueue{}
	req.RunID, req.By = run.ID, "alice"
	if req.Via == "" {
		req.Via = "cli"
	}
	gotRun, gotEsc, err := escalation.Resolve(context.Background(), sc.store, q, req)
	if !errors.Is(err, escalation.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	if gotRun != nil || gotEsc != nil {
		t.Errorf("got run %v, escalation %v with an error", gotRun, gotEsc)
	}
	if after := snap(t, sc.store, run.ID); after != before {
		t.Errorf("a rejected resolution changed the run:\nbefore %+v\nafter  %+v", before, after)
	}
	if e := mustGet(t, sc.store, run.ID).OpenEscalation(); e == nil || e.ID != "e1" {
		t.Errorf("open escalation = %+v, want e1 still open", e)
	}
	if c := q.Calls(); len(c) != 0 {
		t.Errorf("enqueued %v for a rejected resolution", c)
	}
}

func TestResolveGate(t *testing.T) {
	chooseA := func(name string, req escalation.Request) resolvedCase {
		return resolvedCase{name, req, jobs.ResolveChoose, "A", "", "chose [A] Approve"}
	}
	accepted := []resolvedCase{
		chooseA("choose A", escalation.Request{Type: jobs.ResolveChoose, Key: "A"}),
		chooseA("choose a", escalation.Request{Type: jobs.ResolveChoose, Key: "a"}),
		chooseA("choose [A]", escalation.Request{Type: jobs.ResolveChoose, Key: "[A]"}),
		{"choose R", escalation.Request{Type: jobs.ResolveChoose, Key: "R"}, jobs.ResolveChoose, "R", "", "chose [R] Reject"},
		chooseA("answer approve", escalation.Request{Type: jobs.ResolveAnswer, Text: "approve"}),
		chooseA("answer A", escalation.Request{Type: jobs.ResolveAnswer, Text: "A"}),
		chooseA("answer a", escalation.Request{Type: jobs.ResolveAnswer, Text: " a "}),
		chooseA("answer [A] Approve", escalation.Request{Type: jobs.ResolveAnswer, Text: "[A] Approve"}),
		chooseA("answer A) Approve", escalation.Request{Type: jobs.ResolveAnswer, Text: "A) Approve"}),
		chooseA("answer APPROVE with spaces", escalation.Request{Type: jobs.ResolveAnswer, Text: "  APPROVE \n"}),
		chooseA("answer a)  approve", escalation.Request{Type: jobs.ResolveAnswer, Text: "a)  approve"}),
		{"answer Reject", escalation.Request{Type: jobs.ResolveAnswer, Text: "Reject"}, jobs.ResolveChoose, "R", "",
			"chose [R] Reject"},
		{"retry on timeout", escalation.Request{Type: jobs.ResolveRetry, Via: "timeout"}, jobs.ResolveRetry, "", "",
			"asked for one more attempt"},
		{"default choice on timeout", escalation.Request{Type: jobs.ResolveChoose, Key: "R", Via: "timeout"},
			jobs.ResolveChoose, "R", "", "chose [R] Reject"},
		{"abort", escalation.Request{Type: jobs.ResolveAbort, Reason: "not this week"}, jobs.ResolveAbort, "", "",
			"aborted: not this week"},
	}
	rejected := []struct {
		name string
		req  escalation.Request
		msgs []string
	}{
		{"answer not a choice", escalation.Request{Type: jobs.ResolveAnswer, Text: "something else"},
			[]string{`"something else"`, "A, R"}},
		{"answer naming a label partly", escalation.Request{Type: jobs.ResolveAnswer, Text: "approve it"},
			[]string{"A, R"}},
		{"choose not a choice", escalation.Request{Type: jobs.ResolveChoose, Key: "B"}, []string{`"B"`, "A, R"}},
		{"resume", escalation.Request{Type: jobs.ResolveResume}, []string{"A, R"}},
		{"force", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true, Reason: "ship it"}, []string{"A, R"}},
		{"human retry", escalation.Request{Type: jobs.ResolveRetry}, []string{"A, R"}},
		{"human retry from slack", escalation.Request{Type: jobs.ResolveRetry, Via: "slack"}, []string{"A, R"}},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range accepted {
				t.Run(tt.name, func(t *testing.T) { checkConversationalResolved(t, sc, gateSpec, tt) })
			}
			for _, tt := range rejected {
				t.Run("rejects "+tt.name, func(t *testing.T) {
					checkConversationalRejected(t, sc, gateSpec, tt.req, tt.msgs)
				})
			}
		})
	}
}

func TestResolveChat(t *testing.T) {
	accepted := []resolvedCase{
		{"reply", escalation.Request{Type: jobs.ResolveAnswer, Text: "Rename the column to user_id.\nThen go on."},
			jobs.ResolveAnswer, "", "Rename the column to user_id.\nThen go on.", "replied: Rename the column to user_id."},
		{"answer /done", escalation.Request{Type: jobs.ResolveAnswer, Text: "/done"}, jobs.ResolveAnswer, "", "/done",
			"ended the conversation: /done"},
		{"answer /Approve", escalation.Request{Type: jobs.ResolveAnswer, Text: " /Approve "}, jobs.ResolveAnswer, "",
			" /Approve ", "ended the conversation: /approve"},
		{"choose /reject", escalation.Request{Type: jobs.ResolveChoose, Key: "/reject"}, jobs.ResolveChoose, "/reject",
			"", "ended the conversation: /reject"},
		{"choose /DONE", escalation.Request{Type: jobs.ResolveChoose, Key: "/DONE"}, jobs.ResolveChoose, "/done", "",
			"ended the conversation: /done"},
		{"retry", escalation.Request{Type: jobs.ResolveRetry}, jobs.ResolveRetry, "", "", "asked for one more attempt"},
		{"abort", escalation.Request{Type: jobs.ResolveAbort, Reason: "enough"}, jobs.ResolveAbort, "", "",
			"aborted: enough"},
	}
	rejected := []struct {
		name string
		req  escalation.Request
		msgs []string
	}{
		{"resume", escalation.Request{Type: jobs.ResolveResume}, []string{"/done", "/approve", "/reject"}},
		{"force", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true}, []string{"/done"}},
		{"choose not a command", escalation.Request{Type: jobs.ResolveChoose, Key: "/maybe"},
			[]string{`"/maybe"`, "/done, /approve, /reject"}},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range accepted {
				t.Run(tt.name, func(t *testing.T) { checkConversationalResolved(t, sc, chatSpec, tt) })
			}
			for _, tt := range rejected {
				t.Run("rejects "+tt.name, func(t *testing.T) {
					checkConversationalRejected(t, sc, chatSpec, tt.req, tt.msgs)
				})
			}
		})
	}
}

// An ordinary escalation whose options happen to look like a gate's is not a gate: answers stay answers and apply
// still gives guidance and resets the counters.
func TestResolveOrdinaryAnswerIsNotAChoice(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			run := newRun(t, sc)
			open(t, sc.store, run.ID, choiceSpec())
			if _, _, err := escalation.Resolve(context.Background(), sc.store, &fakeQueue{}, escalation.Request{
				RunID: run.ID, Type: jobs.ResolveAnswer, Text: "B", By: "alice", Via: "cli"}); err != nil {
				t.Fatal(err)
			}
			got := mustGet(t, sc.store, run.ID)
			res := got.Escalations[0].Resolution
			if res.Type != jobs.ResolveAnswer || res.Text != "B" || res.Key != "" {
				t.Errorf("resolution = %+v, want the answer kept as it was", res)
			}
			task := got.Task("T1")
			if !reflect.DeepEqual(task.Guidance, []string{"B"}) || task.Failures != 0 || task.Status != jobs.TaskPending {
				t.Errorf("task = guidance %q, failures %d, status %s; want apply's effect", task.Guidance, task.Failures,
					task.Status)
			}
		})
	}
}

func TestChatCommand(t *testing.T) {
	tests := []struct {
		res  jobs.Resolution
		want string
	}{
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "/done"}, escalation.ChatDone},
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "/Approve"}, escalation.ChatApprove},
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "/REJECT"}, escalation.ChatReject},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/done"}, escalation.ChatDone},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "  /DONE\n"}, escalation.ChatDone},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "\t/approve "}, escalation.ChatApprove},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/Reject"}, escalation.ChatReject},
		// The text of a choose is not the command, nor the key of an answer.
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "A", Text: "/done"}, ""},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Key: "/done", Text: "thanks"}, ""},
		// Ordinary messages, commands inside them, and other commands are messages to the agent.
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "Rename the column"}, ""},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "we are not /done yet"}, ""},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "done"}, ""},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/abort"}, ""},
		{jobs.Resolution{Type: jobs.ResolveRetry}, ""},
		{jobs.Resolution{Type: jobs.ResolveAbort, Reason: "/done"}, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %q %q", tt.res.Type, tt.res.Key, tt.res.Text), func(t *testing.T) {
			if got := escalation.ChatCommand(&tt.res); got != tt.want {
				t.Errorf("ChatCommand = %q, want %q", got, tt.want)
			}
		})
	}
}

// A command followed by words ends the conversation with them as its reason; a button's text is its reason.
func TestChatReason(t *testing.T) {
	tests := []struct {
		res       jobs.Resolution
		cmd, want string
	}{
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/reject the migration drops a column"}, escalation.ChatReject, "the migration drops a column"},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: " /REJECT\nno tests\nat all "}, escalation.ChatReject, "no tests\nat all"},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/done please"}, escalation.ChatDone, "please"},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/approve\tlooks good"}, escalation.ChatApprove, "looks good"},
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "/reject", Text: " wrong table "}, escalation.ChatReject, "wrong table"},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/reject"}, escalation.ChatReject, ""},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "/rejected it"}, "", ""},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "please /reject this"}, "", ""},
	}
	for _, tt := range tests {
		if cmd, why := escalation.ChatCommand(&tt.res), escalation.ChatReason(&tt.res); cmd != tt.cmd || why != tt.want {
			t.Errorf("%s %q %q: command %q reason %q, want %q %q", tt.res.Type, tt.res.Key, tt.res.Text, cmd, why, tt.cmd, tt.want)
		}
	}
}

func TestChatOptions(t *testing.T) {
	want := []jobs.Option{{Key: "/done", Label: "Done"}, {Key: "/approve", Label: "Approve"}, {Key: "/reject", Label: "Reject"}}
	got := escalation.ChatOptions()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChatOptions = %+v, want %+v", got, want)
	}
	got[0].Key = "changed"
	if escalation.ChatOptions()[0].Key != "/done" {
		t.Error("ChatOptions returns a shared slice")
	}
}

// gateEscalation is a gate as Open makes it, with a recommendation and a default choice that both name the second
// choice: neither may become the question's default.
func gateEscalation(t *testing.T) *jobs.Escalation {
	t.Helper()
	r, task := memRun()
	s := gateSpec()
	s.Recommendation = "R"
	e := escalation.Open(r, task, &jobs.Change{}, s, now)
	if e == nil || e.Recommendation != "R" || e.Default != "R" {
		t.Fatalf("gate escalation = %+v, want recommendation and default R", e)
	}
	return e
}

func chatEscalation(t *testing.T) *jobs.Escalation {
	t.Helper()
	r, task := memRun()
	e := escalation.Open(r, task, &jobs.Change{}, chatSpec(), now)
	if e == nil {
		t.Fatal("Open returned nil")
	}
	return e
}

func TestQuestionForGate(t *testing.T) {
	e := gateEscalation(t)
	q := escalation.QuestionFor(e)
	if q.Prompt != escalation.GatePrompt || escalation.GatePrompt != "Select: " {
		t.Errorf("prompt = %q, want %q", q.Prompt, "Select: ")
	}
	if q.Default != "" {
		t.Errorf("default = %q, want none (auto-approval takes the first choice; the default choice is for timeouts)", q.Default)
	}
	if q.Type != escalation.MultipleChoice || !reflect.DeepEqual(q.Options, []jobs.Option{gateApprove, gateReject}) {
		t.Errorf("type %s, options %+v; want multiple choice A, R", q.Type, q.Options)
	}
	if q.Escalation != e || q.Stage != "T1" || q.Text != "Ship the release?" {
		t.Errorf("question = %+v", q)
	}
	t.Run("recommendation only", func(t *testing.T) {
		e := *e
		e.Default = ""
		if q := escalation.QuestionFor(&e); q.Default != "" {
			t.Errorf("default = %q, want none", q.Default)
		}
	})
	t.Run("an ordinary question keeps its recommended default", func(t *testing.T) {
		e := *e
		e.Trigger = jobs.TriggerNeedsHelp
		if q := escalation.QuestionFor(&e); q.Default != "R" || q.Prompt != "" {
			t.Errorf("default %q, prompt %q; want R and the default prompt", q.Default, q.Prompt)
		}
	})
}

func TestQuestionForChat(t *testing.T) {
	e := chatEscalation(t)
	q := escalation.QuestionFor(e)
	if q.Prompt != escalation.ChatPrompt || escalation.ChatPrompt != "> " {
		t.Errorf("prompt = %q, want %q", q.Prompt, "> ")
	}
	if q.Type != escalation.MultipleChoice || !reflect.DeepEqual(q.Options, escalation.ChatOptions()) {
		t.Errorf("type %s, options %+v; want multiple choice with the chat commands", q.Type, q.Options)
	}
	if q.Default != "" || q.Text != e.Question || q.Escalation != e {
		t.Errorf("question = %+v", q)
	}
}

func TestAutoApproveConversational(t *testing.T) {
	ctx := context.Background()
	t.Run("gate takes its first choice", func(t *testing.T) {
		a, err := escalation.AutoApprove{}.Ask(ctx, escalation.QuestionFor(gateEscalation(t)))
		if err != nil || !reflect.DeepEqual(a, sel(gateApprove)) {
			t.Errorf("Ask = %+v, %v; want A (not the recommendation or default R)", a, err)
		}
	})
	t.Run("chat ends the conversation", func(t *testing.T) {
		a, err := escalation.AutoApprove{}.Ask(ctx, escalation.QuestionFor(chatEscalation(t)))
		if err != nil || a.Selected == nil || a.Selected.Key != escalation.ChatDone || a.Value != escalation.ChatDone {
			t.Errorf("Ask = %+v, %v; want /done", a, err)
		}
	})
	// And the answer resolves the escalation, through RequestFor and Resolve, as the runner does.
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range []struct {
				name     string
				spec     func() escalation.Spec
				describe string
			}{
				{"gate", gateSpec, "chose [A] Approve"},
				{"chat", chatSpec, "ended the conversation: /done"},
			} {
				t.Run(tt.name, func(t *testing.T) {
					run := newRun(t, sc)
					e := open(t, sc.store, run.ID, tt.spec())
					a, err := escalation.AutoApprove{}.Ask(ctx, escalation.QuestionFor(e))
					if err != nil {
						t.Fatal(err)
					}
					req, ok := escalation.RequestFor(e, run.ID, a, "orch", "auto-approve")
					if !ok {
						t.Fatalf("answer %+v resolves nothing", a)
					}
					if _, _, err := escalation.Resolve(ctx, sc.store, &fakeQueue{}, req); err != nil {
						t.Fatal(err)
					}
					got := mustGet(t, sc.store, run.ID).Escalations[0]
					if d := escalation.Describe(got, got.Resolution); d != tt.describe {
						t.Errorf("resolved: %q, want %q", d, tt.describe)
					}
				})
			}
		})
	}
}

func TestConsoleConversational(t *testing.T) {
	ctx := context.Background()
	t.Run("gate", func(t *testing.T) {
		c, pw, out := console(t)
		typeLines(pw, "r\n")
		got, err := c.Ask(ctx, escalation.QuestionFor(gateEscalation(t)))
		if err != nil || !reflect.DeepEqual(got, sel(gateReject)) {
			t.Errorf("Ask = %+v, %v; want R", got, err)
		}
		if out.String() != "Select: " {
			t.Errorf("output = %q, want %q", out.String(), "Select: ")
		}
	})
	t.Run("chat", func(t *testing.T) {
		c, pw, out := console(t)
		q := escalation.QuestionFor(chatEscalation(t))
		typeLines(pw, "\nrename the column\n")
		got, err := c.Ask(ctx, q)
		if err != nil || !reflect.DeepEqual(got, escalation.Answer{Text: "rename the column"}) {
			t.Errorf("Ask = %+v, %v; want the message", got, err)
		}
		if out.String() != "> > " {
			t.Errorf("output = %q, want the prompt %q twice (a blank line prompts again)", out.String(), "> ")
		}
		typeLines(pw, "/done\n")
		got, err = c.Ask(ctx, q)
		if err != nil || got.Selected == nil || got.Selected.Key != escalation.ChatDone {
			t.Errorf("second Ask = %+v, %v; want /done", got, err)
		}
	})
	t.Run("ordinary", func(t *testing.T) {
		c, pw, out := console(t)
		r, task := memRun()
		typeLines(pw, "a\n")
		if _, err := c.Ask(ctx, escalation.QuestionFor(escalation.Open(r, task, &jobs.Change{}, choiceSpec(), now))); err != nil {
			t.Fatal(err)
		}
		if out.String() != escalation.Prompt {
			t.Errorf("output = %q, want the ordinary prompt", out.String())
		}
	})
}

func TestParseAnswerChat(t *testing.T) {
	q := escalation.QuestionFor(chatEscalation(t))
	done := escalation.ChatOptions()[0]
	reject := escalation.ChatOptions()[2]
	tests := []struct {
		line string
		want escalation.Answer
	}{
		{"/done", sel(done)},
		{"  /Done ", sel(done)},
		{"/REJECT", sel(reject)},
		{"/retry", escalation.Answer{Value: "/retry"}},
		{"/abort enough", escalation.Answer{Value: "/abort", Text: "enough"}},
		{"rename the column", escalation.Answer{Text: "rename the column"}},
		{"/done please", escalation.Answer{Text: "/done please"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			if got := escalation.ParseAnswer(q, tt.line); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseAnswer(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

// What a human types at a gate or a chat resolves it, end to end: ParseAnswer, RequestFor, Resolve.
func TestTypedAnswerResolvesConversational(t *testing.T) {
	tests := []struct {
		name     string
		spec     func() escalation.Spec
		line     string
		typ      jobs.ResolutionType
		key      string
		describe string
	}{
		{"gate key", gateSpec, "a)", jobs.ResolveChoose, "A", "chose [A] Approve"},
		{"gate label", gateSpec, "approve", jobs.ResolveChoose, "A", "chose [A] Approve"},
		{"gate key and label", gateSpec, "R) Reject", jobs.ResolveChoose, "R", "chose [R] Reject"},
		{"gate abort", gateSpec, "/abort no", jobs.ResolveAbort, "", "aborted: no"},
		{"chat message", chatSpec, "use uuid keys", jobs.ResolveAnswer, "", "replied: use uuid keys"},
		{"chat done", chatSpec, "/done", jobs.ResolveChoose, "/done", "ended the conversation: /done"},
		{"chat retry", chatSpec, "/retry", jobs.ResolveRetry, "", "asked for one more attempt"},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					run := newRun(t, sc)
					e := open(t, sc.store, run.ID, tt.spec())
					a := escalation.ParseAnswer(escalation.QuestionFor(e), tt.line)
					req, ok := escalation.RequestFor(e, run.ID, a, "alice", "console")
					if !ok {
						t.Fatalf("%q resolves nothing", tt.line)
					}
					if _, _, err := escalation.Resolve(context.Background(), sc.store, &fakeQueue{}, req); err != nil {
						t.Fatalf("%q: %v", tt.line, err)
					}
					got := mustGet(t, sc.store, run.ID).Escalations[0]
					if got.Resolution.Type != tt.typ || got.Resolution.Key != tt.key {
						t.Errorf("%q: resolution %+v, want %s %q", tt.line, got.Resolution, tt.typ, tt.key)
					}
					if d := escalation.Describe(got, got.Resolution); d != tt.describe {
						t.Errorf("%q: %q, want %q", tt.line, d, tt.describe)
					}
				})
			}
		})
	}
}

func TestQueueConversational(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	q := escalation.NewQueue([]string{"A", "/done", "b"}, &out)
	gate := escalation.QuestionFor(gateEscalation(t))
	chat := escalation.QuestionFor(chatEscalation(t))
	if a, err := q.Ask(ctx, gate); err != nil || !reflect.DeepEqual(a, sel(gateApprove)) {
		t.Errorf("gate answer = %+v, %v; want A", a, err)
	}
	if a, err := q.Ask(ctx, chat); err != nil || a.Selected == nil || a.Selected.Key != escalation.ChatDone {
		t.Errorf("chat answer = %+v, %v; want /done", a, err)
	}
	if _, err := q.Ask(ctx, choice("")); err != nil {
		t.Fatal(err)
	}
	want := "Select: A (from the answers file)\n" + "> /done (from the answers file)\n" +
		escalation.Prompt + "b (from the answers file)\n"
	if out.String() != want {
		t.Errorf("output =\n%q\nwant\n%q", out.String(), want)
	}
}
