package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The answer form: a question's Answer… button opens it (views.open), and its submission (a view_submission) answers
// the question with an option from a list, or in words, through the same atomic resolution as a click. Its view and
// the reading of a submission are package blocks'.

// submitDeadline bounds the work done for a submission. Slack waits 3 s for the ack of a view_submission, and only
// that ack can show errors in the form: so the question is resolved before acking, and must be within this.
const submitDeadline = 2 * time.Second

// mismatchText answers a form whose question is not the one on record.
const mismatchText = "This form does not match the question on record: nothing was answered."

// handleSubmission answers a view_submission over HTTP: an empty 200 closes the form, a response_action "errors"
// shows what is wrong in it.
func (s *Server) handleSubmission(w http.ResponseWriter, r *http.Request, cb slack.InteractionCallback) {
	resp := s.answers.submission(r.Context(), cb)
	if resp == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// socketSubmission answers a view_submission over Socket Mode: the ack carries the response. The work goes to the
// background workers (bounded, drained on shutdown) so that the envelopes behind it are not held up.
func (s *Server) socketSubmission(client *socketmode.Client, req *socketmode.Request, cb slack.InteractionCallback) {
	err := s.urgent.Submit(func(ctx context.Context) {
		if resp := s.answers.submission(ctx, cb); resp != nil {
			s.ack(client, req, resp)
			return
		}
		s.ack(client, req, nil)
	})
	if err != nil {
		s.ack(client, req, blocks.ReadSubmission(cb.View).Error(err.Error()))
	}
}

// openAnswer opens the answer form for a click on a question's Answer… button, after the checks every click gets.
// The click's trigger_id expires 3 s after the click: nothing but those checks (store reads) comes before views.open.
func (a *answers) openAnswer(ctx context.Context, act blocks.ActionValue, user, channel, thread, ts, triggerID, responseURL string) {
	if !a.clickAllowed(ctx, act, user, channel, thread, ts, responseURL) {
		return
	}
	run, err := a.store.Get(ctx, act.RunID)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		a.talk.respond(ctx, responseURL, doesNotMatchText)
		return
	case err != nil:
		a.log.Warn("opening the answer form", "run_id", act.RunID, "err", err)
		a.talk.respond(ctx, responseURL, unavailableText)
		return
	}
	e := run.Escalation(act.EscalationID)
	switch {
	case e == nil:
		a.talk.respond(ctx, responseURL, doesNotMatchText)
		return
	case e.Resolution != nil:
		a.talk.respond(ctx, responseURL, blocks.AlreadyAnswered(e))
		return
	case run.Status.Terminal():
		a.talk.respond(ctx, responseURL, fmt.Sprintf("Run %s has ended (%s): nothing to answer.", run.ID, run.Status))
		return
	}
	meta := blocks.AnswerMeta{RunID: run.ID, EscalationID: e.ID, Channel: channel, Thread: thread, TS: ts}
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := a.api.OpenViewContext(octx, triggerID, blocks.AnswerModal(run, e, meta)); err != nil {
		a.log.Warn("opening the answer form", "run_id", run.ID, "escalation", e.ID, "err", err)
		text := "The answer form did not open (" + err.Error() + "): press Answer… again, or reply in the thread."
		if msg := err.Error(); strings.Contains(msg, "expired_trigger_id") || strings.Contains(msg, "exchanged_trigger_id") {
			text = "The answer form took too long to open: press Answer… again."
		}
		a.talk.respond(ctx, responseURL, text)
	}
}

// formOpener is the job that opens the answer form for a click on Answer…, after the checks every click gets. A click
// on someone's Home is accepted only on the view orch last published as that very person's Home; the form is then the
// one the question's message would open, checked against the same message.
func (a *answers) formOpener(cb slack.InteractionCallback, act blocks.ActionValue) func(context.Context) {
	user, trigger, responseURL := cb.User.ID, cb.TriggerID, cb.ResponseURL
	if cb.Container.Type == "view" {
		viewID := clickedView(cb)
		return func(ctx context.Context) {
			ok, err := a.mirror.IsHome(ctx, user, viewID)
			if err != nil || !ok {
				a.log.Warn("an Answer… click from a view that is not the clicker's Home", "run_id", act.RunID,
					"escalation", act.EscalationID, "user", user, "err", err)
				return
			}
			channel, thread, ts, err := a.mirror.QuestionMessage(ctx, act.RunID, act.EscalationID)
			if err != nil {
				a.log.Warn("opening the answer form from the Home", "run_id", act.RunID, "err", err)
				return
			}
			a.openAnswer(ctx, act, user, channel, thread, ts, trigger, "")
		}
	}
	channel, thread, ts := clickedMessage(cb)
	return func(ctx context.Context) { a.openAnswer(ctx, act, user, channel, thread, ts, trigger, responseURL) }
}

// submission resolves a question from the answer form, as a click would: the form's private_metadata is checked
// against the store, the person against ORCH_ALLOWED_USERS, and escalation.Resolve decides which answer wins. It
// returns nil when the question is answered (the form closes; the poster updates the question's message), or the
// errors to show in the form, when nothing changed.
func (a *answers) submission(ctx context.Context, cb slack.InteractionCallback) *slack.ViewSubmissionResponse {
	if cb.View.CallbackID != blocks.CallbackAnswer {
		a.log.Warn("ignoring the submission of a form orch did not make", "callback_id", cb.View.CallbackID)
		return nil
	}
	// The resolution happens before the ack, so that its errors can be shown in the form: Slack waits 3 s for it.
	ctx, cancel := context.WithTimeout(ctx, submitDeadline)
	defer cancel()
	f := blocks.ReadSubmission(cb.View)
	user := cb.User.ID
	meta, err := blocks.DecodeAnswerMeta(cb.View.PrivateMetadata)
	if err != nil {
		a.log.Warn("an answer form whose private_metadata orch did not write", "user", user, "err", err)
		return f.Error(mismatchText)
	}
	if !a.talk.allowed.Allows(user) {
		a.talk.refused(user, "answer", fmt.Sprintf("run %s escalation %s", meta.RunID, meta.EscalationID))
		return f.Error(notAllowedText)
	}
	if bad := f.Check(); bad != nil {
		return bad
	}
	run, e, bad := a.formQuestion(ctx, f, meta)
	if bad != nil {
		return bad
	}
	if f.Key != "" && !offersOption(e, f.Key) {
		return f.OptionError(fmt.Sprintf("%q is not an option of this question.", f.Key))
	}
	saved, _, err := escalation.Resolve(ctx, a.store, a.queue, answerRequest(run.ID, e, user, f.Key, f.Words))
	return a.resolvedForm(ctx, f, meta, e, saved, err)
}

// offersOption reports whether key is one of the options question e has (escalation.AnswersOf), which are all the form
// lists: an option it never showed (a security question's) is forged.
func offersOption(e *jobs.Escalation, key string) bool {
	for _, o := range escalation.AnswersOf(e).Options {
		if strings.EqualFold(o.Key, key) {
			return true
		}
	}
	return false
}

// formQuestion finds the open question a form answers: its message must be the question's as orch posted it, and
// the question still open.
func (a *answers) formQuestion(ctx context.Context, f blocks.Submission, meta blocks.AnswerMeta) (*jobs.Run, *jobs.Escalation, *slack.ViewSubmissionResponse) {
	ok, err := a.mirror.IsQuestionMessage(ctx, meta.RunID, meta.EscalationID, meta.Channel, meta.Thread, meta.TS)
	if err != nil {
		a.log.Warn("checking an answer form", "run_id", meta.RunID, "err", err)
		return nil, nil, f.Error(unavailableText)
	}
	if !ok {
		a.log.Warn("an answer form whose message is not the question's", "run_id", meta.RunID, "escalation", meta.EscalationID)
		return nil, nil, f.Error(mismatchText)
	}
	run, err := a.store.Get(ctx, meta.RunID)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		return nil, nil, f.Error(mismatchText)
	case err != nil:
		a.log.Warn("checking an answer form", "run_id", meta.RunID, "err", err)
		return nil, nil, f.Error(unavailableText)
	}
	e := run.Escalation(meta.EscalationID)
	switch {
	case e == nil:
		return nil, nil, f.Error(mismatchText)
	case e.Resolution != nil:
		return nil, nil, f.Error(blocks.AlreadyAnswered(e))
	}
	return run, e, nil
}

// resolvedForm is the form's response to escalation.Resolve's outcome: nil (the form closes) when the answer is saved.
func (a *answers) resolvedForm(ctx context.Context, f blocks.Submission, meta blocks.AnswerMeta, e *jobs.Escalation, saved *jobs.Run, err error) *slack.ViewSubmissionResponse {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, escalation.ErrAlreadyResolved):
		if r, gerr := a.store.Get(ctx, meta.RunID); gerr == nil && r.Escalation(e.ID) != nil && r.Escalation(e.ID).Resolution != nil {
			return f.Error(blocks.AlreadyAnswered(r.Escalation(e.ID)))
		}
		return f.Error("Already answered.")
	case errors.Is(err, escalation.ErrNoOpenEscalation):
		return f.Error("Nothing to answer: " + err.Error())
	case errors.Is(err, escalation.ErrInvalid):
		if e.Trigger == jobs.TriggerGate {
			return f.OptionError(err.Error()) // words that name none of the gate's choices
		}
		return f.Error(err.Error())
	case errors.Is(err, jobs.ErrRunNotFound):
		return f.Error(mismatchText)
	case saved != nil:
		// The answer is saved; only the queueing of the run's next step failed, and the next worker start picks
		// it up. The form closes: asked again, the person would only be told the question is answered.
		a.log.Error("answered from the form, but the run could not be queued to continue", "run_id", meta.RunID, "err", err)
		return nil
	}
	a.log.Error("resolving from the answer form", "run_id", meta.RunID, "err", err)
	return f.Error(unavailableText)
}

// answerRequest is what a submission asks of escalation.Resolve: a chosen option (the words, if any, kept as the
// answer's text), or words alone as free-text guidance. An approval denied with words is a denial with its reason,
// as a thread reply gives.
func answerRequest(runID string, e *jobs.Escalation, user, key, words string) escalation.Request {
	req := escalation.Request{RunID: runID, EscalationID: e.ID, By: user, Via: "slack"}
	switch {
	case key != "" && e.Trigger == jobs.TriggerApproval && strings.EqualFold(key, escalation.DenyCall) && words != "":
		req.Type, req.Text = jobs.ResolveAnswer, words
	case key != "":
		req.Type, req.Key, req.Text = jobs.ResolveChoose, key, words
	default:
		req.Type, req.Text = jobs.ResolveAnswer, words
	}
	return req
}
