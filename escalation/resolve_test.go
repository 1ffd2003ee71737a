package escalation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

func TestResolve(t *testing.T) {
	type want struct {
		runStatus  jobs.RunStatus
		taskStatus jobs.TaskStatus
		key        string
		reason     string
		guidance   []string
		failures   int // the attempt counter after the resolution
		errors     int
		retryGuide string
		warning    bool // a force-continue "warning" audit entry
	}
	kept := want{failures: 3, errors: 3, retryGuide: "try a smaller change"}
	reset := want{}
	with := func(w want, f func(*want)) want { f(&w); return w }

	tests := []struct {
		name string
		req  escalation.Request
		want want
	}{
		{"choose", escalation.Request{Type: jobs.ResolveChoose, Key: "b"}, with(reset, func(w *want) {
			w.runStatus, w.taskStatus, w.key = jobs.RunParked, jobs.TaskPending, "B"
			w.guidance = []string{"The human chose option B: In-memory"}
		})},
		{"choose with spaces", escalation.Request{Type: jobs.ResolveChoose, Key: " C "}, with(reset, func(w *want) {
			w.runStatus, w.taskStatus, w.key = jobs.RunParked, jobs.TaskPending, "C"
			w.guidance = []string{"The human chose option C: Postgres"}
		})},
		{"answer", escalation.Request{Type: jobs.ResolveAnswer, Text: "Use sqlite; it is already a dependency."},
			with(reset, func(w *want) {
				w.runStatus, w.taskStatus = jobs.RunParked, jobs.TaskPending
				w.guidance = []string{"Use sqlite; it is already a dependency."}
			})},
		{"resume", escalation.Request{Type: jobs.ResolveResume}, with(reset, func(w *want) {
			w.runStatus, w.taskStatus = jobs.RunParked, jobs.TaskPending
		})},
		{"retry keeps the counter", escalation.Request{Type: jobs.ResolveRetry}, with(kept, func(w *want) {
			w.runStatus, w.taskStatus = jobs.RunParked, jobs.TaskPending
		})},
		{"abort", escalation.Request{Type: jobs.ResolveAbort, Reason: "wrong plan"}, with(kept, func(w *want) {
			w.runStatus, w.taskStatus, w.reason = jobs.RunAborted, jobs.TaskFailed, "wrong plan"
		})},
		{"force", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true}, with(kept, func(w *want) {
			w.runStatus, w.taskStatus, w.reason, w.warning = jobs.RunParked, jobs.TaskForced, "risk acknowledged", true
		})},
		{"force with reason", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true, Reason: "done by hand"},
			with(kept, func(w *want) {
				w.runStatus, w.taskStatus, w.reason, w.warning = jobs.RunParked, jobs.TaskForced, "done by hand", true
			})},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					run := newRun(t, sc)
					opened := open(t, sc.store, run.ID, choiceSpec())
					sc.clock.Advance(90 * time.Second)
					q := &fakeQueue{}
					req := tt.req
					req.RunID, req.By, req.Via = run.ID, "alice", "slack"

					gotRun, gotEsc, err := escalation.Resolve(ctx, sc.store, q, req)
					if err != nil {
						t.Fatalf("Resolve: %v", err)
					}
					if gotEsc == nil || gotEsc.ID != opened.ID {
						t.Fatalf("resolved %+v, want %s", gotEsc, opened.ID)
					}
					stored := mustGet(t, sc.store, run.ID)
					gotJSON, _ := json.Marshal(gotRun)
					storedJSON, _ := json.Marshal(stored)
					if string(gotJSON) != string(storedJSON) {
						t.Errorf("Resolve returned a run that differs from the stored one")
					}
					if got := q.Calls(); !reflect.DeepEqual(got, []resumeCall{{run.ID, "e1"}}) {
						t.Errorf("resumes enqueued = %v, want one for e1", got)
					}

					w := tt.want
					if stored.Status != w.runStatus {
						t.Errorf("run status = %s, want %s", stored.Status, w.runStatus)
					}
					task := stored.Task("T1")
					if task.Status != w.taskStatus {
						t.Errorf("task status = %s, want %s", task.Status, w.taskStatus)
					}
					if !reflect.DeepEqual(task.Guidance, w.guidance) {
						t.Errorf("guidance = %q, want %q", task.Guidance, w.guidance)
					}
					if task.Failures != w.failures || len(task.Errors) != w.errors || task.RetryGuidance != w.retryGuide {
						t.Errorf("failures/errors/retry guidance = %d/%d/%q, want %d/%d/%q", task.Failures,
							len(task.Errors), task.RetryGuidance, w.failures, w.errors, w.retryGuide)
					}
					if task.Started != 3 {
						t.Errorf("started = %d, want 3 (Resolve starts nothing)", task.Started)
					}
					if st := stored.Task("T2").Status; st != jobs.TaskPending {
						t.Errorf("other task = %s, want pending", st)
					}
					if stored.OpenEscalation() != nil {
						t.Errorf("escalation still open")
					}

					res := stored.Escalations[0].Resolution
					wantRes := &jobs.Resolution{Type: tt.req.Type, Key: w.key, Text: tt.req.Text, Reason: w.reason,
						By: "alice", Via: "slack", At: sc.clock.Now().UTC()}
					if !reflect.DeepEqual(res, wantRes) {
						t.Errorf("resolution =\n%+v\nwant\n%+v", res, wantRes)
					}

					if w.runStatus == jobs.RunAborted {
						if stored.Reason != "wrong plan" || !stored.EndedAt.Equal(sc.clock.Now()) {
							t.Errorf("aborted run: reason %q, ended %v; want %q, %v", stored.Reason, stored.EndedAt,
								"wrong plan", sc.clock.Now())
						}
						ab := events(t, sc.store, run.ID, jobs.RunAbortedEvent{}.Kind())
						if len(ab) != 1 || ab[0].Body != (jobs.RunAbortedEvent{Reason: "wrong plan", By: "alice", DurationMS: ab[0].Body.(jobs.RunAbortedEvent).DurationMS}) {
							t.Errorf("run_aborted events = %+v", ab)
						}
					} else {
						if !stored.EndedAt.IsZero() || stored.Reason != "" {
							t.Errorf("run ended: %v %q", stored.EndedAt, stored.Reason)
						}
						if n := len(events(t, sc.store, run.ID, jobs.RunAbortedEvent{}.Kind())); n != 0 {
							t.Errorf("run_aborted events = %d, want none", n)
						}
					}

					evs := events(t, sc.store, run.ID, jobs.ResolutionEvent{}.Kind())
					if len(evs) != 1 {
						t.Fatalf("resolution events = %d, want 1", len(evs))
					}
					ev := evs[0].Body.(jobs.ResolutionEvent)
					if ev.EscalationID != "e1" || ev.Resolution != tt.req.Type || ev.By != "alice" || ev.Via != "slack" ||
						ev.WaitSeconds != 90 || ev.Summary != escalation.Describe(stored.Escalations[0], res) {
						t.Errorf("resolution event = %+v", ev)
					}

					au := audit(t, sc.store, run.ID)
					var actions []string
					for _, a := range au {
						actions = append(actions, a.Action)
					}
					wantActions := []string{"escalated", "resolved"}
					if w.warning {
						wantActions = append(wantActions, "warning")
					}
					if !reflect.DeepEqual(actions, wantActions) {
						t.Fatalf("audit actions = %q, want %q", actions, wantActions)
					}
					r := au[1]
					if r.EscalationID != "e1" || r.TaskID != "T1" || r.By != "alice" || r.Via != "slack" ||
						r.Resolution != string(tt.req.Type) || r.Trigger != jobs.TriggerNeedsHelp || r.Detail == "" {
						t.Errorf("resolved audit entry = %+v", r)
					}
					if w.warning {
						if a := au[2]; a.By != "alice" || a.Via != "slack" || !strings.Contains(a.Detail, "force-continue") {
							t.Errorf("warning audit entry = %+v", a)
						}
					}
				})
			}
		})
	}
}

func TestResolveRejectsInvalid(t *testing.T) {
	tests := []struct {
		name    string
		spec    func() escalation.Spec
		req     escalation.Request
		wantErr error
		wantMsg []string
	}{
		{"abort needs a reason", choiceSpec, escalation.Request{Type: jobs.ResolveAbort, Reason: "  "},
			escalation.ErrInvalid, []string{"--reason"}},
		{"force needs acknowledge-risk", choiceSpec, escalation.Request{Type: jobs.ResolveForce, Reason: "trust me"},
			escalation.ErrInvalid, []string{"--acknowledge-risk"}},
		{"choose needs a key", choiceSpec, escalation.Request{Type: jobs.ResolveChoose},
			escalation.ErrInvalid, []string{"option key"}},
		{"answer needs text", choiceSpec, escalation.Request{Type: jobs.ResolveAnswer, Text: " \n "},
			escalation.ErrInvalid, []string{"text"}},
		{"unknown type", choiceSpec, escalation.Request{Type: "skip"},
			escalation.ErrInvalid, []string{`"skip"`}},
		{"no type", choiceSpec, escalation.Request{},
			escalation.ErrInvalid, []string{"unknown resolution"}},
		{"key not an option", choiceSpec, escalation.Request{Type: jobs.ResolveChoose, Key: "Z"},
			escalation.ErrInvalid, []string{`"Z"`, "e1", "A, B, C"}},
		{"key with decoration", choiceSpec, escalation.Request{Type: jobs.ResolveChoose, Key: "B for simplicity"},
			escalation.ErrInvalid, []string{"A, B, C"}},
		{"choose without options", func() escalation.Spec {
			return escalation.Spec{Trigger: jobs.TriggerAttemptCap, Source: "orch", Question: "failed 3 times"}
		}, escalation.Request{Type: jobs.ResolveChoose, Key: "A"}, escalation.ErrInvalid, []string{"--answer"}},
		{"unknown escalation id", choiceSpec, escalation.Request{Type: jobs.ResolveResume, EscalationID: "e9"},
			escalation.ErrInvalid, []string{"e9"}},
		// Guidance with a NUL byte would be in every later prompt of the task: refused while the question is open.
		{"an answer with a NUL byte", choiceSpec, escalation.Request{Type: jobs.ResolveAnswer, Text: "use\x00redis"},
			escalation.ErrInvalid, []string{"NUL byte (at byte 3)", "cannot be passed to an agent", "again without it"}},
		{"a chosen option's text with a NUL byte", choiceSpec, escalation.Request{Type: jobs.ResolveChoose, Key: "A",
			Text: "\x00"}, escalation.ErrInvalid, []string{"NUL byte"}},
		{"an answer that is not UTF-8", choiceSpec, escalation.Request{Type: jobs.ResolveAnswer, Text: "caf\xe9 au lait"},
			escalation.ErrInvalid, []string{"not UTF-8 text (invalid byte at byte 3)", "as UTF-8"}},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					run := newRun(t, sc)
					open(t, sc.store, run.ID, tt.spec())
					before := snap(t, sc.store, run.ID)
					sc.clock.Advance(time.Minute)
					q := &fakeQueue{}
					req := tt.req
					req.RunID, req.By, req.Via = run.ID, "alice", "cli"

					gotRun, gotEsc, err := escalation.Resolve(context.Background(), sc.store, q, req)
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("err = %v, want %v", err, tt.wantErr)
					}
					for _, m := range tt.wantMsg {
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
					if c := q.Calls(); len(c) != 0 {
						t.Errorf("enqueued %v for a rejected resolution", c)
					}
				})
			}
		})
	}
}

// TestResolveKeepsAnswerAsWritten: control characters and size are no reason to refuse an answer, and what becomes
// guidance is the answer byte for byte (it reaches the agent on stdin).
func TestResolveKeepsAnswerAsWritten(t *testing.T) {
	text := "\x1b[31mred\x1b[0m\r\n\ttab\b\x7f\x01 " + strings.Repeat("three hundred kibibytes of guidance ", 300<<10/36)
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			run := newRun(t, sc)
			open(t, sc.store, run.ID, choiceSpec())
			_, esc, err := escalation.Resolve(context.Background(), sc.store, &fakeQueue{}, escalation.Request{RunID: run.ID,
				Type: jobs.ResolveAnswer, Text: text, By: "alice", Via: "cli"})
			if err != nil {
				t.Fatal(err)
			}
			task := mustGet(t, sc.store, run.ID).Task(esc.TaskID)
			if n := len(task.Guidance); n != 1 || !strings.Contains(task.Guidance[0], text) {
				t.Fatalf("the guidance (%d items) does not hold the %d-byte answer as written", n, len(text))
			}
		})
	}
}

func TestResolveWithoutOpenEscalation(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			q := &fakeQueue{}

			t.Run("never escalated", func(t *testing.T) {
				run := newRun(t, sc)
				before := snap(t, sc.store, run.ID)
				_, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, Type: jobs.ResolveResume})
				if !errors.Is(err, escalation.ErrNoOpenEscalation) || !strings.Contains(err.Error(), "running") {
					t.Errorf("err = %v, want ErrNoOpenEscalation saying the run is running", err)
				}
				if after := snap(t, sc.store, run.ID); after != before {
					t.Error("the run changed")
				}
			})
			t.Run("unknown run", func(t *testing.T) {
				_, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: jobs.NewRunID(), Type: jobs.ResolveResume})
				if !errors.Is(err, jobs.ErrRunNotFound) {
					t.Errorf("err = %v, want ErrRunNotFound", err)
				}
			})
			t.Run("already resolved", func(t *testing.T) {
				run := newRun(t, sc)
				open(t, sc.store, run.ID, choiceSpec())
				if _, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, EscalationID: "e1",
					Type: jobs.ResolveChoose, Key: "A", By: "alice", Via: "console"}); err != nil {
					t.Fatal(err)
				}
				before := snap(t, sc.store, run.ID)

				// A second click on the same question names who answered it.
				_, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, EscalationID: "e1",
					Type: jobs.ResolveChoose, Key: "B", By: "bob", Via: "slack"})
				if !errors.Is(err, escalation.ErrAlreadyResolved) {
					t.Fatalf("err = %v, want ErrAlreadyResolved", err)
				}
				for _, m := range []string{"alice", "e1", "chose A) Redis"} {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not mention %q", err, m)
					}
				}
				// Without an escalation id there is nothing open; the error still says who answered and how to go on.
				_, _, err = escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, Type: jobs.ResolveResume, By: "bob"})
				if !errors.Is(err, escalation.ErrNoOpenEscalation) {
					t.Errorf("err = %v, want ErrNoOpenEscalation", err)
				}
				for _, m := range []string{"alice", "orch resume " + run.ID} {
					if err != nil && !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not mention %q", err, m)
					}
				}
				if after := snap(t, sc.store, run.ID); after != before {
					t.Error("a late resolution changed the run")
				}
			})
			t.Run("a late answer does not answer the next question", func(t *testing.T) {
				run := newRun(t, sc)
				open(t, sc.store, run.ID, choiceSpec())
				if _, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, EscalationID: "e1",
					Type: jobs.ResolveRetry, By: "alice"}); err != nil {
					t.Fatal(err)
				}
				e2 := open(t, sc.store, run.ID, escalation.Spec{Trigger: jobs.TriggerAttemptCap, Source: "orch", Question: "again"})
				_, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, EscalationID: "e1",
					Type: jobs.ResolveAbort, Reason: "stop", By: "bob"})
				if !errors.Is(err, escalation.ErrAlreadyResolved) {
					t.Fatalf("err = %v, want ErrAlreadyResolved", err)
				}
				if got := mustGet(t, sc.store, run.ID); got.OpenEscalation() == nil || got.OpenEscalation().ID != e2.ID ||
					got.Status != jobs.RunParked {
					t.Errorf("e2 was touched: %+v", got.OpenEscalation())
				}
			})
		})
	}
}

func TestResolveAuditTrail(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			run := newRun(t, sc)
			open(t, sc.store, run.ID, choiceSpec())
			sc.clock.Advance(time.Minute)
			if _, _, err := escalation.Resolve(ctx, sc.store, &fakeQueue{}, escalation.Request{RunID: run.ID,
				Type: jobs.ResolveChoose, Key: "B", By: "U024BE7LH", Via: "slack"}); err != nil {
				t.Fatal(err)
			}
			sc.clock.Advance(time.Minute)
			open(t, sc.store, run.ID, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch", Question: "A secret leaked.\nRotate it."})
			sc.clock.Advance(time.Minute)
			if _, _, err := escalation.Resolve(ctx, sc.store, &fakeQueue{}, escalation.Request{RunID: run.ID,
				Type: jobs.ResolveAbort, Reason: "rotating the key first", Via: "cli"}); err != nil {
				t.Fatal(err)
			}

			got := audit(t, sc.store, run.ID)
			t0 := newClock().Now()
			want := []jobs.AuditEntry{
				{Time: t0, RunID: run.ID, TaskID: "T1", EscalationID: "e1", Action: "escalated",
					Trigger: jobs.TriggerNeedsHelp, Detail: "Which cache backend should I use?", By: "orch", Via: "agent"},
				{Time: t0.Add(time.Minute), RunID: run.ID, TaskID: "T1", EscalationID: "e1", Action: "resolved",
					Trigger: jobs.TriggerNeedsHelp, Resolution: "choose", Detail: "chose B) In-memory", By: "U024BE7LH", Via: "slack"},
				{Time: t0.Add(2 * time.Minute), RunID: run.ID, TaskID: "T1", EscalationID: "e2", Action: "escalated",
					Trigger: jobs.TriggerSecurity, Detail: "A secret leaked.", By: "orch", Via: "orch"},
				{Time: t0.Add(3 * time.Minute), RunID: run.ID, TaskID: "T1", EscalationID: "e2", Action: "resolved",
					Trigger: jobs.TriggerSecurity, Resolution: "abort", Detail: "aborted: rotating the key first", By: "unknown", Via: "cli"},
			}
			if len(got) != len(want) {
				t.Fatalf("audit =\n%+v\nwant\n%+v", got, want)
			}
			for i := range want {
				if !got[i].Time.Equal(want[i].Time) {
					t.Errorf("entry %d time = %v, want %v", i, got[i].Time, want[i].Time)
				}
				got[i].Time = want[i].Time
				if got[i] != want[i] {
					t.Errorf("entry %d =\n%+v\nwant\n%+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestResolveRedactsSecrets(t *testing.T) {
	token := "ghp_" + strings.Repeat("Zx9Q", 10)
	pw := "hunter2" + "hunter2"
	tests := []struct {
		name string
		req  escalation.Request
	}{
		{"answer", escalation.Request{Type: jobs.ResolveAnswer, Text: "use " + token + " and password=" + pw}},
		{"abort reason", escalation.Request{Type: jobs.ResolveAbort, Reason: "leaked " + token + " password=" + pw}},
		{"force reason", escalation.Request{Type: jobs.ResolveForce, AcknowledgeRisk: true, Reason: "ok " + token + " password=" + pw}},
	}
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					run := newRun(t, sc)
					open(t, sc.store, run.ID, choiceSpec())
					req := tt.req
					req.RunID, req.By = run.ID, "alice"
					_, e, err := escalation.Resolve(ctx, sc.store, &fakeQueue{}, req)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(e.Resolution.Text+e.Resolution.Reason, "[REDACTED:github-token]") {
						t.Errorf("resolution %+v lacks the redaction marker", e.Resolution)
					}
					evs, _ := sc.store.Events(ctx, run.ID, "", 0)
					everything, _ := json.Marshal(struct {
						R *jobs.Run
						E []jobs.Event
						A []jobs.AuditEntry
					}{mustGet(t, sc.store, run.ID), evs, audit(t, sc.store, run.ID)})
					for _, s := range []string{token, pw} {
						if strings.Contains(string(everything), s) {
							t.Errorf("%q is stored (run, events or audit)", s)
						}
					}
				})
			}
		})
	}
}

func TestResolveEnqueueFailure(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			run := newRun(t, sc)
			open(t, sc.store, run.ID, choiceSpec())
			queueDown := errors.New("redis: connection refused")
			q := &fakeQueue{err: queueDown}

			gotRun, e, err := escalation.Resolve(context.Background(), sc.store, q, escalation.Request{RunID: run.ID,
				Type: jobs.ResolveChoose, Key: "A", By: "alice", Via: "cli"})
			if !errors.Is(err, queueDown) {
				t.Fatalf("err = %v, want the queue's error", err)
			}
			if want := "orch resume " + run.ID; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not tell to run %q", err, want)
			}
			if errors.Is(err, escalation.ErrInvalid) || errors.Is(err, escalation.ErrAlreadyResolved) {
				t.Errorf("err %v looks like a rejection", err)
			}
			if gotRun == nil || e == nil || e.Resolution == nil {
				t.Fatalf("run %v, escalation %v: want both, resolved", gotRun, e)
			}
			stored := mustGet(t, sc.store, run.ID)
			if res := stored.Escalations[0].Resolution; res == nil || res.Key != "A" {
				t.Errorf("stored resolution = %+v, want the saved choice", res)
			}
			if len(q.Calls()) != 1 {
				t.Errorf("enqueue attempts = %d, want 1", len(q.Calls()))
			}
		})
	}
}

// Of any number of concurrent resolutions (terminal, Slack click, thread reply, timeout) exactly one wins.
func TestResolveConcurrently(t *testing.T) {
	const n = 20
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			run := newRun(t, sc)
			open(t, sc.store, run.ID, choiceSpec())
			before := snap(t, sc.store, run.ID)
			q := &fakeQueue{}

			reqs := make([]escalation.Request, n)
			for i := range reqs {
				r := escalation.Request{RunID: run.ID, By: fmt.Sprintf("user%d", i), Via: "slack"}
				if i%2 == 0 {
					r.EscalationID = "e1"
				}
				switch i % 6 {
				case 0:
					r.Type, r.Key = jobs.ResolveChoose, string(rune('A'+i%3))
				case 1:
					r.Type, r.Text = jobs.ResolveAnswer, fmt.Sprintf("answer %d", i)
				case 2:
					r.Type = jobs.ResolveResume
				case 3:
					r.Type = jobs.ResolveRetry
				case 4:
					r.Type, r.Reason = jobs.ResolveAbort, fmt.Sprintf("abort %d", i)
				case 5:
					r.Type, r.AcknowledgeRisk = jobs.ResolveForce, true
				}
				reqs[i] = r
			}

			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range reqs {
				wg.Go(func() {
					<-start
					_, _, errs[i] = escalation.Resolve(ctx, sc.store, q, reqs[i])
				})
			}
			close(start)
			wg.Wait()

			winner := -1
			for i, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Errorf("requests %d and %d both won", winner, i)
					}
					winner = i
				case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
				default:
					t.Errorf("request %d: unexpected error %v", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no resolution won")
			}
			if got := q.Calls(); !reflect.DeepEqual(got, []resumeCall{{run.ID, "e1"}}) {
				t.Errorf("resumes enqueued = %v, want exactly one", got)
			}
			resolved := 0
			for _, a := range audit(t, sc.store, run.ID) {
				if a.Action == "resolved" {
					resolved++
					if a.By != reqs[winner].By {
						t.Errorf("audit says %s resolved it, the winner was %s", a.By, reqs[winner].By)
					}
				}
			}
			if resolved != 1 {
				t.Errorf("resolved audit entries = %d, want 1", resolved)
			}
			if n := len(events(t, sc.store, run.ID, jobs.ResolutionEvent{}.Kind())); n != 1 {
				t.Errorf("resolution events = %d, want 1", n)
			}
			stored := mustGet(t, sc.store, run.ID)
			res := stored.Escalations[0].Resolution
			if res == nil || res.By != reqs[winner].By || res.Type != reqs[winner].Type {
				t.Errorf("stored resolution %+v, want the winner's %+v", res, reqs[winner])
			}
			var prev jobs.Run
			if err := json.Unmarshal([]byte(before.run), &prev); err != nil {
				t.Fatal(err)
			}
			if stored.Version != prev.Version+1 {
				t.Errorf("version %d → %d: want exactly one write", prev.Version, stored.Version)
			}
		})
	}
}

// A worker commits Open and only then would anyone be asked; a resolution arriving in between (a Slack click on the
// event, `orch escalation resolve` in another terminal) is applied and the run is queued to continue.
func TestResolveWhileParking(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			run := newRun(t, sc)
			q := &fakeQueue{}

			open(t, sc.store, run.ID, choiceSpec())
			// Nobody has been asked yet: no interviewer, no QuestionFor.
			if _, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID,
				Type: jobs.ResolveChoose, Key: "A", By: "alice", Via: "slack"}); err != nil {
				t.Fatalf("Resolve: %v", err)
			}

			stored := mustGet(t, sc.store, run.ID)
			e := stored.Escalation("e1")
			if e == nil || e.Resolution == nil || e.Resolution.Key != "A" {
				t.Fatalf("escalation = %+v, want resolved with A", e)
			}
			// Still parked with the resolution saved: what the resume handler needs to continue the run.
			if stored.Status != jobs.RunParked || stored.OpenEscalation() != nil ||
				stored.Task("T1").Status != jobs.TaskPending {
				t.Errorf("run %s, open %v, task %s: want parked, none, pending", stored.Status, stored.OpenEscalation(),
					stored.Task("T1").Status)
			}
			if got := q.Calls(); !reflect.DeepEqual(got, []resumeCall{{run.ID, "e1"}}) {
				t.Errorf("resumes enqueued = %v, want one for e1", got)
			}
			// The interviewer that was about to ask finds it answered.
			q2 := escalation.QuestionFor(e)
			if _, _, err := escalation.Resolve(ctx, sc.store, q, escalation.Request{RunID: run.ID, EscalationID: q2.Escalation.ID,
				Type: jobs.ResolveChoose, Key: "B", By: "bob", Via: "console"}); !errors.Is(err, escalation.ErrAlreadyResolved) {
				t.Errorf("late console answer: err = %v, want ErrAlreadyResolved", err)
			}
		})
	}
}

func TestResolveDefaultsBy(t *testing.T) {
	for _, sc := range stores(t) {
		t.Run(sc.name, func(t *testing.T) {
			run := newRun(t, sc)
			open(t, sc.store, run.ID, choiceSpec())
			_, e, err := escalation.Resolve(context.Background(), sc.store, &fakeQueue{},
				escalation.Request{RunID: run.ID, Type: jobs.ResolveResume, Via: "cli"})
			if err != nil {
				t.Fatal(err)
			}
			if e.Resolution.By != "unknown" {
				t.Errorf("by = %q, want unknown", e.Resolution.By)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	e := &jobs.Escalation{ID: "e1", Options: []jobs.Option{{Key: "A", Label: "Redis"}}}
	tests := []struct {
		res  jobs.Resolution
		want string
	}{
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "a"}, "chose A) Redis"},
		{jobs.Resolution{Type: jobs.ResolveChoose, Key: "Z"}, "chose Z"},
		{jobs.Resolution{Type: jobs.ResolveAnswer, Text: "use sqlite\nand more"}, "answered: use sqlite"},
		{jobs.Resolution{Type: jobs.ResolveResume}, "resumed"},
		{jobs.Resolution{Type: jobs.ResolveRetry}, "asked for one more attempt"},
		{jobs.Resolution{Type: jobs.ResolveAbort, Reason: "wrong plan"}, "aborted: wrong plan"},
		{jobs.Resolution{Type: jobs.ResolveForce}, "forced the task to continue (risk acknowledged)"},
		{jobs.Resolution{Type: "other"}, "other"},
	}
	for _, tt := range tests {
		t.Run(string(tt.res.Type), func(t *testing.T) {
			if got := escalation.Describe(e, &tt.res); got != tt.want {
				t.Errorf("Describe = %q, want %q", got, tt.want)
			}
		})
	}
}
