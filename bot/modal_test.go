package bot

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/blocks/blockstest"
	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The answer form's names on the wire, as package blocks writes them: what Slack sends back of a submission.
const (
	blockAnswerOption  = "orch_answer_option"
	blockAnswerWords   = "orch_answer_words"
	actionAnswerOption = "option"
	// optionOwnWords is the option that chooses none of the question's, to answer in words.
	optionOwnWords = "orch:own-words"
	// maxAnswerWords is the longest answer the form takes.
	maxAnswerWords = 3000
)

// escalateWith parks a run on a question of spec, as a worker would, and waits for its message in the thread.
func (h *harness) escalateWith(runID string, spec escalation.Spec) (string, slackfake.Message) {
	h.t.Helper()
	var id string
	_, err := h.store.Update(context.Background(), runID, func(r *jobs.Run, c *jobs.Change) error {
		e := escalation.Open(r, r.Tasks[0], c, spec, h.store.Now())
		if e == nil {
			return errors.New("the task hit the escalation cap")
		}
		id = e.ID
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return id, h.waitQuestion(runID, id)
}

// openForm presses Answer… on question q as user and returns the form Slack opened.
func (h *harness) openForm(q slackfake.Message, user string) slackfake.View {
	h.t.Helper()
	n := len(h.fake.Views())
	v, ok := slackfake.Buttons(q)[ActionAnswer]
	if !ok {
		h.t.Fatalf("no Answer… button on %q (buttons %v)", q.Text, slackfake.Buttons(q))
	}
	h.click(q, user, ActionAnswer, v)
	var view slackfake.View
	h.waitFor("the answer form", func() bool {
		if vs := h.fake.Views(); len(vs) > n {
			view = vs[n]
			return true
		}
		return false
	})
	if view.User != user {
		h.t.Fatalf("the form opened for %s, want %s", view.User, user)
	}
	return view
}

// submitForm submits form v as user with input (by block id) and returns the errors the ack shows in the form: nil
// when the form closes.
func (h *harness) submitForm(v slackfake.View, user string, input map[string]string) map[string]string {
	h.t.Helper()
	return h.submitBody(h.fake.ViewSubmission(v, user, input))
}

func (h *harness) submitBody(body []byte) map[string]string {
	h.t.Helper()
	code, resp := h.post("/slack/interactions", body, formType)
	if code != http.StatusOK {
		h.t.Fatalf("submission: status %d: %q", code, resp)
	}
	if resp == "" {
		return nil
	}
	return ackErrors(h.t, []byte(resp))
}

// ackErrors reads a view_submission response that shows errors in the form.
func ackErrors(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var ack struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(data, &ack); err != nil || ack.ResponseAction != "errors" || len(ack.Errors) != 1 {
		t.Fatalf("ack %s (%v): want response_action errors with one error", data, err)
	}
	return ack.Errors
}

// forged is the submission of form v with its view edited, as no Slack client would send it.
func (h *harness) forged(v slackfake.View, user string, input map[string]string, edit func(view map[string]any)) []byte {
	p := h.fake.ViewSubmissionPayload(v, user, input)
	edit(p["view"].(map[string]any))
	return []byte(url.Values{"payload": {string(marshal(h.t, p))}}.Encode())
}

// unanswered checks that a refused submission changed nothing.
func (h *harness) unanswered(t *testing.T, runID, escID string) {
	t.Helper()
	if res := h.esc(runID, escID).Resolution; res != nil {
		t.Fatalf("answered: %+v", res)
	}
	if n := len(h.audit(runID, "resolved")); n != 0 {
		t.Errorf("%d resolutions audited", n)
	}
	if n := h.queue.count(runID, escID); n != 0 {
		t.Errorf("%d resumes enqueued", n)
	}
}

// A click on Answer… opens the form with the question's options and the recommendation chosen already; submitting an
// option answers the question as a click does, and the thread shows it.
func TestAnswerFormChoosesAnOption(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice, bob := h.user("ALICE"), h.user("BOB")
		run, _ := h.startRun(alice)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")

		v := h.openForm(q, bob)
		var form slack.View
		if err := json.Unmarshal(v.JSON, &form); err != nil {
			t.Fatal(err)
		}
		meta, err := blocks.DecodeAnswerMeta(form.PrivateMetadata)
		if err != nil || meta != (blocks.AnswerMeta{RunID: run.ID, EscalationID: escID, Channel: q.Channel, Thread: q.ThreadTS, TS: q.TS}) {
			t.Errorf("private_metadata %+v (%v), want the question and its message", meta, err)
		}
		_, opts, initial := blockstest.Options(t, blockstest.Inputs(form.Blocks.BlockSet)[blockAnswerOption])
		if len(opts) != 3 || opts[0].Text.Text != "A) Redis (recommended)" || opts[1].Text.Text != "B) In-memory" {
			t.Errorf("options %+v", opts)
		}
		if initial == nil || initial.Value != "A" {
			t.Errorf("initial option %+v, want the recommendation A", initial)
		}

		if errs := h.submitForm(v, bob, map[string]string{blockAnswerOption: "B", blockAnswerWords: "fewer moving parts"}); errs != nil {
			t.Fatalf("the form did not close: %v", errs)
		}
		res := h.esc(run.ID, escID).Resolution // resolved before the ack
		if res == nil || res.Type != jobs.ResolveChoose || res.Key != "B" || res.By != bob || res.Via != "slack" ||
			res.Text != "fewer moving parts" {
			t.Fatalf("resolution = %+v, want bob's B from Slack with his words", res)
		}
		if a := h.audit(run.ID, "resolved"); len(a) != 1 || a[0].By != bob || a[0].Via != "slack" {
			t.Errorf("audit = %+v, want bob's resolution from Slack", a)
		}
		if n := h.queue.count(run.ID, escID); n != 1 {
			t.Errorf("%d resumes enqueued, want 1", n)
		}
		h.waitFor("the question to show the answer", func() bool {
			m := h.message(q.TS)
			return strings.Contains(m.Text, "<@"+bob+"> chose B) In-memory") && len(slackfake.Buttons(m)) == 0
		})
	})
}

// Words answer as free-text guidance: with the recommendation chosen already, by choosing to answer in words; with
// nothing chosen, by the words alone.
func TestAnswerFormWords(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		for _, tt := range []struct {
			name string
			rec  string
			opt  map[string]string
		}{
			{"instead of the recommendation", "A", map[string]string{blockAnswerOption: optionOwnWords}},
			{"nothing chosen", "", nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				run, _ := h.startRun(alice)
				escID, q := h.escalateWith(run.ID, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
					Question: "Which cache?", Options: []string{"A) Redis", "B) In-memory"}, Recommendation: tt.rec})
				v := h.openForm(q, alice)
				if tt.opt != nil { // answering in words, with no words written
					errs := h.submitForm(v, alice, tt.opt)
					if !strings.Contains(errs[blockAnswerWords], "Write an answer") {
						t.Errorf("errors %q, want a request for words under them", errs)
					}
					h.unanswered(t, run.ID, escID)
				}
				input := map[string]string{blockAnswerWords: "  use the LRU from the stdlib, not a new dependency \n"}
				for k, v := range tt.opt {
					input[k] = v
				}
				if errs := h.submitForm(v, alice, input); errs != nil {
					t.Fatalf("the form did not close: %v", errs)
				}
				res := h.esc(run.ID, escID).Resolution
				if res == nil || res.Type != jobs.ResolveAnswer || res.Text != "use the LRU from the stdlib, not a new dependency" ||
					res.By != alice || res.Via != "slack" {
					t.Fatalf("resolution = %+v, want alice's words", res)
				}
				if g := h.run(run.ID).Tasks[0].Guidance; len(g) != 1 || g[0] != res.Text {
					t.Errorf("task guidance = %q, want the words", g)
				}
				h.waitFor("the question to show the answer", func() bool {
					return strings.Contains(h.message(q.TS).Text, "<@"+alice+"> answered: use the LRU")
				})
			})
		}
	})
}

// Each kind of question takes what its message says it takes: a gate its choice, a conversation a reply or an ending,
// an approval a decision or a denial with its reason, a security question guidance in words.
func TestAnswerFormEveryKind(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		gate := escalation.Spec{Trigger: jobs.TriggerGate, Source: "orch", Question: "Ship it?",
			Keyed: []jobs.Option{{Key: "Y", Label: "Yes"}, {Key: "N", Label: "No"}}}
		chat := escalation.Spec{Trigger: jobs.TriggerChat, Source: "agent", Question: "Renamed it. Anything else?",
			Keyed: escalation.ChatOptions()}
		approval := escalation.Spec{Trigger: jobs.TriggerApproval, Source: "agent", Call: true, Question: "Run: git push --force",
			Keyed: escalation.ApprovalOptions("Bash(git push:*)")}
		security := escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch", Question: "A secret leaked."}
		for _, tt := range []struct {
			name  string
			spec  escalation.Spec
			input map[string]string
			want  jobs.Resolution
		}{
			{"gate choice", gate, map[string]string{blockAnswerOption: "N", blockAnswerWords: "not on a Friday"},
				jobs.Resolution{Type: jobs.ResolveChoose, Key: "N", Text: "not on a Friday"}},
			{"chat reply", chat, map[string]string{blockAnswerWords: "also update the docs"},
				jobs.Resolution{Type: jobs.ResolveAnswer, Text: "also update the docs"}},
			{"chat ending", chat, map[string]string{blockAnswerOption: "/done"},
				jobs.Resolution{Type: jobs.ResolveChoose, Key: "/done"}},
			{"approval allowed", approval, map[string]string{blockAnswerOption: escalation.AllowOnce},
				jobs.Resolution{Type: jobs.ResolveChoose, Key: escalation.AllowOnce}},
			{"approval denied with a reason", approval, map[string]string{blockAnswerOption: escalation.DenyCall,
				blockAnswerWords: "never force-push main"}, jobs.Resolution{Type: jobs.ResolveAnswer, Text: "never force-push main"}},
			{"security guidance", security, map[string]string{blockAnswerWords: "rotated; go on"},
				jobs.Resolution{Type: jobs.ResolveAnswer, Text: "rotated; go on"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				run, _ := h.startRun(alice)
				escID, q := h.escalateWith(run.ID, tt.spec)
				if errs := h.submitForm(h.openForm(q, alice), alice, tt.input); errs != nil {
					t.Fatalf("the form did not close: %v", errs)
				}
				res := h.esc(run.ID, escID).Resolution
				if res == nil || res.Type != tt.want.Type || res.Key != tt.want.Key || res.Text != tt.want.Text ||
					res.By != alice || res.Via != "slack" {
					t.Fatalf("resolution = %+v, want %+v by alice from Slack", res, tt.want)
				}
				h.waitFor("the question to show the answer", func() bool {
					return strings.Contains(h.message(q.TS).Text, "<@"+alice+">")
				})
			})
		}
	})
}

// What the form cannot answer is said in the form, under the input it is about, and changes nothing.
func TestAnswerFormErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var mallory string
		h := newHarness(t, rdb, func(h *harness, c *Config) {
			mallory = h.user("MALLORY")
			c.AllowedUsers = []string{h.user("ALICE"), h.user("BOB")}
		})
		alice, bob := h.user("ALICE"), h.user("BOB")
		run, _ := h.startRun(alice)
		escID, q := h.escalateWith(run.ID, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: "Which cache?", Options: []string{"A) Redis", "B) In-memory"}})
		v := h.openForm(q, alice)
		for _, tt := range []struct {
			name  string
			body  []byte
			block string
			says  string
		}{
			{"nothing chosen and nothing written", h.fake.ViewSubmission(v, alice, nil), blockAnswerOption,
				"Choose an option, or write an answer"},
			{"words too long", h.fake.ViewSubmission(v, alice, map[string]string{blockAnswerWords: strings.Repeat("é", maxAnswerWords+1)}),
				blockAnswerWords, "3001 characters long; at most 3000"},
			{"an option that is not the question's", h.forged(v, alice, map[string]string{blockAnswerOption: "A"}, func(view map[string]any) {
				sel := view["state"].(map[string]any)["values"].(map[string]any)[blockAnswerOption].(map[string]any)[actionAnswerOption].(map[string]any)
				sel["selected_option"] = map[string]any{"text": map[string]any{"type": "plain_text", "text": "Z) Zookeeper"}, "value": "Z"}
			}), blockAnswerOption, `"Z" is not an option of this question`},
			{"someone outside ORCH_ALLOWED_USERS", h.fake.ViewSubmission(v, mallory, map[string]string{blockAnswerOption: "A"}),
				blockAnswerOption, "not allowed to answer here"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				errs := h.submitBody(tt.body)
				if !strings.Contains(errs[tt.block], tt.says) {
					t.Errorf("errors %q, want under %s: %q", errs, tt.block, tt.says)
				}
				h.unanswered(t, run.ID, escID)
			})
		}
		h.waitFor("mallory's refusal in the audit", func() bool { return len(h.refusals(mallory)) == 1 })

		// A second submission, after someone else answered, is told who did.
		late := h.openForm(q, bob)
		if errs := h.submitForm(v, alice, map[string]string{blockAnswerOption: "B"}); errs != nil {
			t.Fatalf("alice's answer: %v", errs)
		}
		errs := h.submitForm(late, bob, map[string]string{blockAnswerOption: "A"})
		if want := "Already answered by <@" + alice + ">: chose B) In-memory."; errs[blockAnswerOption] != want {
			t.Errorf("errors %q, want %q", errs, want)
		}
		if res := h.esc(run.ID, escID).Resolution; res.By != alice || res.Key != "B" {
			t.Errorf("the late submission changed the answer: %+v", res)
		}
		if n := len(h.audit(run.ID, "resolved")); n != 1 {
			t.Errorf("%d resolutions audited, want 1", n)
		}
		// Opening the form again is told at once.
		h.click(q, bob, ActionAnswer, slackfake.Buttons(q)[ActionAnswer])
		h.waitEphemeral("Already answered by <@" + alice + ">")
	})
}

// The form's private_metadata is only a claim: one naming another run or escalation, or a message that is not the
// question's, answers nothing.
func TestAnswerFormForgedMetadata(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		runA, _ := h.startRun(alice)
		escA, qA := h.escalate(runA.ID, "Which cache?", "A) Redis", "B) In-memory")
		runB, _ := h.startRun(alice)
		escB, qB := h.escalate(runB.ID, "Which database?", "A) Postgres", "B) SQLite")
		v := h.openForm(qA, alice)
		real := blocks.AnswerMeta{RunID: runA.ID, EscalationID: escA, Channel: qA.Channel, Thread: qA.ThreadTS, TS: qA.TS}
		for _, tt := range []struct {
			name string
			meta func(m blocks.AnswerMeta) string
		}{
			{"another run's question, at this message", func(m blocks.AnswerMeta) string {
				m.RunID, m.EscalationID = runB.ID, escB
				return m.Encode()
			}},
			{"another run's question and message", func(m blocks.AnswerMeta) string {
				m.RunID, m.EscalationID, m.Thread, m.TS = runB.ID, escB, qB.ThreadTS, qB.TS+"x"
				return m.Encode()
			}},
			{"an escalation the run does not have", func(m blocks.AnswerMeta) string {
				m.EscalationID = "e9"
				return m.Encode()
			}},
			{"a message that is not the question's", func(m blocks.AnswerMeta) string {
				m.TS = h.ts()
				return m.Encode()
			}},
			{"another channel", func(m blocks.AnswerMeta) string {
				m.Channel = "C" + h.sfx + "X"
				return m.Encode()
			}},
			{"not orch's metadata", func(blocks.AnswerMeta) string { return `{"run":"` + runA.ID + `"}` }},
		} {
			t.Run(tt.name, func(t *testing.T) {
				body := h.forged(v, alice, map[string]string{blockAnswerOption: "A"}, func(view map[string]any) {
					view["private_metadata"] = tt.meta(real)
				})
				errs := h.submitBody(body)
				if !strings.Contains(errs[blockAnswerOption], "does not match the question on record") {
					t.Errorf("errors %q, want the mismatch under the options", errs)
				}
				h.unanswered(t, runA.ID, escA)
				h.unanswered(t, runB.ID, escB)
			})
		}
	})
}

// A click from a view that is not the clicker's Home (here one orch never published) opens no form. A trigger
// presented after its 3 s is refused by Slack, and the person is told to press again.
func TestAnswerClickRefused(t *testing.T) {
	h := newHarness(t, clients(t)["miniredis"])
	alice := h.user("ALICE")
	run, _ := h.startRun(alice)
	_, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
	value := slackfake.Buttons(q)[ActionAnswer]

	m := template(t, "block_actions_orch_thread_CONSTRUCTED.json")
	m["container"] = map[string]any{"type": "view", "view_id": "V0PKB1ZFV"}
	m["user"] = map[string]any{"id": alice, "username": alice, "team_id": "T0001"}
	m["trigger_id"] = h.fake.Trigger(alice)
	a := m["actions"].([]any)[0].(map[string]any)
	a["action_id"], a["value"] = ActionAnswer, value
	code, resp := h.post("/slack/interactions", []byte(url.Values{"payload": {string(marshal(t, m))}}.Encode()), formType)
	if code != http.StatusOK || resp != "" {
		t.Fatalf("click from a view: %d %q, want a plain ack", code, resp)
	}
	h.waitFor("the refusal in the log", func() bool {
		return strings.Contains(h.logs.String(), "an Answer… click from a view that is not the clicker's Home")
	})

	body := h.fake.Click(q, alice, ActionAnswer, value)
	h.fake.Advance(4 * time.Second)
	if code, resp := h.post("/slack/interactions", body, formType); code != http.StatusOK || resp != "" {
		t.Fatalf("click: %d %q", code, resp)
	}
	h.waitEphemeral("The answer form took too long to open: press Answer… again.")
	if n := len(h.fake.Views()); n != 0 {
		t.Errorf("%d forms opened", n)
	}
}

// The Answer… button on the Home opens the form the question's message would open; its submission answers.
func TestAnswerFormFromTheHome(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.homeUser("ALICE")
		run, _ := h.startRun(alice)
		escID, _ := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
		home := h.openHome(alice)
		h.homeClick(home, alice, ActionAnswer, homeButton(t, home, run.ID, escID, ActionAnswer).Value)
		h.waitFor("the answer form", func() bool { return len(h.fake.Views()) == 1 })
		v := h.fake.Views()[0]
		if v.User != alice {
			t.Fatalf("the form opened for %s", v.User)
		}
		if errs := h.submitForm(v, alice, map[string]string{blockAnswerOption: "B", blockAnswerWords: "keep it small"}); errs != nil {
			t.Fatalf("errors %v", errs)
		}
		if res := h.waitResolved(run.ID, escID); res.Type != jobs.ResolveChoose || res.Key != "B" || res.By != alice || res.Via != "slack" {
			t.Fatalf("resolution %+v", res)
		}
	})
}

// With the store away, a submission is told so in the form, and nothing changes.
func TestAnswerFormStoreAway(t *testing.T) {
	m := miniredis.RunT(t)
	h := newHarness(t, redis.NewClient(&redis.Options{Addr: m.Addr()}))
	alice := h.user("ALICE")
	run, _ := h.startRun(alice)
	_, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")
	v := h.openForm(q, alice)
	m.Close()
	errs := h.submitForm(v, alice, map[string]string{blockAnswerOption: "B"})
	if errs[blockAnswerOption] != unavailableText {
		t.Errorf("errors %q, want the store's absence under the options", errs)
	}
}

// Over Socket Mode: a click opens the form; a submission's ack carries the form's errors, or closes it.
func TestAnswerFormSocketMode(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h, sm := socketHarness(t, rdb)
		sm.send(t, template(t, "socketmode_hello_slackgo_test.json"))
		alice, bob := h.user("ALICE"), h.user("BOB")
		env := "env-run-" + h.sfx
		sm.send(t, h.slashFrame(env, "run plan.md", alice))
		sm.ack(h, env)
		h.waitFor("the run", func() bool { return h.starter.created() == 1 })
		run := h.starter.run(0)
		escID, q := h.escalate(run.ID, "Which cache?", "A) Redis", "B) In-memory")

		env = "env-answer-" + h.sfx
		frame := h.clickFrame(env, q, bob, ActionAnswer, slackfake.Buttons(q)[ActionAnswer])
		frame["payload"].(map[string]any)["trigger_id"] = h.fake.Trigger(bob)
		sm.send(t, frame)
		if ack := sm.ack(h, env); ack["payload"] != nil {
			t.Errorf("ack of the click carries %v", ack["payload"])
		}
		var v slackfake.View
		h.waitFor("the answer form", func() bool {
			vs := h.fake.Views()
			if len(vs) == 1 {
				v = vs[0]
			}
			return len(vs) == 1
		})

		submit := func(envelopeID string, input map[string]string) map[string]any {
			f := template(t, "socketmode_interactive_view_submission_docs_SHAPE.json")
			f["envelope_id"], f["payload"] = envelopeID, h.fake.ViewSubmissionPayload(v, bob, input)
			sm.send(t, f)
			return sm.ack(h, envelopeID)
		}
		ack := submit("env-submit1-"+h.sfx, map[string]string{blockAnswerWords: strings.Repeat("x", maxAnswerWords+1)})
		errs := ackErrors(t, marshal(t, ack["payload"]))
		if !strings.Contains(errs[blockAnswerWords], "at most 3000") {
			t.Errorf("errors %q, want the length under the words", errs)
		}
		h.unanswered(t, run.ID, escID)

		ack = submit("env-submit2-"+h.sfx, map[string]string{blockAnswerOption: "B"})
		if ack["payload"] != nil {
			t.Errorf("ack of a good submission carries %v, want nothing (the form closes)", ack["payload"])
		}
		if res := h.esc(run.ID, escID).Resolution; res == nil || res.By != bob || res.Key != "B" || res.Via != "slack" {
			t.Fatalf("resolution = %+v, want bob's B from Slack", res)
		}
		h.waitFor("the question to show the answer", func() bool {
			return strings.Contains(h.message(q.TS).Text, "<@"+bob+"> chose B) In-memory")
		})
	})
}

// The form takes only the answers its question has (escalation.AnswersOf): a security question offers no option, so
// an option forged into its form answers nothing, though the question holds one.
func TestAnswerFormRefusesAnOptionTheQuestionDoesNotHave(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := newHarness(t, rdb)
		alice := h.user("ALICE")
		run, _ := h.startRun(alice)
		escID, q := h.escalateWith(run.ID, escalation.Spec{Trigger: jobs.TriggerSecurity, Source: "orch",
			Question: "A secret leaked.", Options: []string{"A) Go on as it is"}})
		if len(h.esc(run.ID, escID).Options) != 1 {
			t.Fatalf("the question holds options %v, want the one this test forges", h.esc(run.ID, escID).Options)
		}
		v := h.openForm(q, alice)
		body := h.forged(v, alice, map[string]string{blockAnswerWords: "go on"}, func(view map[string]any) {
			values := view["state"].(map[string]any)["values"].(map[string]any)
			values[blockAnswerOption] = map[string]any{actionAnswerOption: map[string]any{"type": "radio_buttons",
				"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": "A) Go on"}, "value": "A"}}}
		})
		errs := h.submitBody(body)
		if !strings.Contains(errs[blockAnswerWords], `"A" is not an option of this question`) {
			t.Errorf("errors %q, want the option refused", errs)
		}
		h.unanswered(t, run.ID, escID)
	})
}
