package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The answer form: a question's Answer… button opens it (views.open), and its submission (a view_submission) answers
// the question with an option from a list, or in words, through the same atomic resolution as a click.

// CallbackAnswer is the callback_id of the answer form.
const CallbackAnswer = "orch_answer"

// The form's inputs: the option (radio buttons, or a menu beyond Slack's ten) and the words. Validation errors are
// shown under one of them, by block id.
const (
	blockAnswerOption  = "orch_answer_option"
	blockAnswerWords   = "orch_answer_words"
	actionAnswerOption = "option"
	actionAnswerWords  = "words"
	// optionOwnWords is the value of the option that chooses none of the question's: a radio group or menu with a
	// recommendation chosen already cannot be emptied, and a person who would rather answer in words must be able to.
	optionOwnWords = "orch:own-words"
)

// Slack's limits on a modal and its inputs (docs.slack.dev: reference/views/modal-views, the input block, the radio
// button group and select menu elements, the plain-text input element, the option object).
const (
	maxModalTitle      = 24 // title, submit and close texts
	maxPrivateMetadata = 3000
	maxRadioOptions    = 10
	maxSelectOptions   = 100
	maxOptionText      = 75
	maxOptionValue     = 150
	maxInputLabel      = 2000
	maxInputHint       = 2000
	// maxAnswerWords is the most a plain-text input's max_length may be: the longest answer the form takes.
	maxAnswerWords = 3000
	// maxFormError keeps an error under an input to a few lines.
	maxFormError = 300
)

// submitDeadline bounds the work done for a submission. Slack waits 3 s for the ack of a view_submission, and only
// that ack can show errors in the form: so the question is resolved before acking, and must be within this.
const submitDeadline = 2 * time.Second

// Texts a person reads when an answer is refused.
const (
	mismatchText   = "This form does not match the question on record: nothing was answered."
	notAllowedText = "You are not allowed to answer here (ORCH_ALLOWED_USERS)."
)

// answerMeta is the form's private_metadata: the question it answers and where the question's message is. Like a
// button's value it is only a claim: a submission checks it against the store again.
type answerMeta struct {
	RunID        string `json:"run"`
	EscalationID string `json:"esc"`
	Channel      string `json:"channel"`
	Thread       string `json:"thread"`
	TS           string `json:"ts"`
}

func (m answerMeta) encode() string {
	data, _ := json.Marshal(m) // strings only: it cannot fail
	return string(data)
}

// decodeAnswerMeta reads private_metadata back, strictly: every field present and shaped as orch writes it.
func decodeAnswerMeta(s string) (answerMeta, error) {
	var m answerMeta
	if len(s) > maxPrivateMetadata {
		return m, fmt.Errorf("private_metadata is %d bytes long", len(s))
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("private_metadata: %w", err)
	}
	for _, f := range []struct{ what, v string }{{"run id", m.RunID}, {"escalation id", m.EscalationID},
		{"channel", m.Channel}, {"thread", m.Thread}, {"message ts", m.TS}} {
		if err := checkActionField(f.what, f.v); err != nil {
			return m, fmt.Errorf("private_metadata: %w", err)
		}
	}
	return m, nil
}

// answerForm is how the form words its inputs for a kind of question: what its options are, and what words do. The
// words follow what a thread reply does for the same question (escalation.Resolve, EscalationMessage's hints).
type answerForm struct {
	optionLabel    string
	optionRequired bool   // a gate takes one of its choices and nothing else
	ownWords       string // the option that leaves the answer to the words
	wordsLabel     string
	wordsHint      string
}

func answerFormFor(e *jobs.Escalation) answerForm {
	switch {
	case e.Trigger == jobs.TriggerGate:
		return answerForm{optionLabel: "Your choice", optionRequired: true, wordsLabel: "Note",
			wordsHint: "Kept with your choice in the run's record; the pipeline goes the way you choose."}
	case e.Trigger == jobs.TriggerChat:
		return answerForm{optionLabel: "End the conversation", ownWords: "Neither: my reply is below",
			wordsLabel: "Your reply to the agent",
			wordsHint: "One turn of the conversation: the agent answers in the thread. To end it instead, choose " +
				"Done or Approve above, or Reject to fail the task."}
	case e.Trigger == jobs.TriggerApproval:
		return answerForm{optionLabel: "Your decision", ownWords: "Deny, with the reason below",
			wordsLabel: "Reason to deny the call",
			wordsHint: "Words alone, or with Deny, deny the call with your reason, which the agent reads. " +
				"With an Allow chosen they are only kept on record."}
	case e.Trigger == jobs.TriggerSecurity:
		return answerForm{wordsLabel: "Guidance for the agent",
			wordsHint: "Rotate the credential first. The agent reads your words on its next attempt."}
	case e.Call:
		return answerForm{optionLabel: "Choose an answer", ownWords: "None: my own answer is below",
			wordsLabel: "Or answer in your own words",
			wordsHint:  "The agent reads it as the answer to its question."}
	}
	return answerForm{optionLabel: "Choose an option", ownWords: "None: my guidance is below",
		wordsLabel: "Guidance for the agent",
		wordsHint: "Free-text guidance the agent reads on its next attempt. Written beside a chosen option, your " +
			"words are kept on record with the choice."}
}

// answerModal is the answer form of escalation e: the question as its message shows it, what the run is, the options
// (the recommended one marked and chosen already) and a box for words.
func answerModal(r *jobs.Run, e *jobs.Escalation, meta answerMeta) slack.ModalViewRequest {
	f := answerFormFor(e)
	blocks := escalationHead(r, e, taskLabel(r, e.TaskID), questionSuffix(e))
	blocks = append(blocks, contextBlock(fmt.Sprintf("Plan: %s · started by %s", escapeCut(planTitle(r), maxLine, false),
		startedBy(r.Origin))))
	if e.Trigger == jobs.TriggerSecurity {
		blocks = append(blocks, contextBlock(":rotating_light: A secret may have leaked: *rotate the credential* "+
			"before the agent goes on."))
	}
	choice, left := optionInput(e, f)
	if choice != nil {
		blocks = append(blocks, choice)
	}
	if left > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf("%s not listed: choose them with %s from a terminal.",
			jobs.Count(left, "option"), inlineCode("orch escalation resolve "+r.ID+" --choose KEY", maxLine))))
	}
	words := slack.NewPlainTextInputBlockElement(nil, actionAnswerWords)
	words.Multiline, words.MaxLength = true, maxAnswerWords
	input := slack.NewInputBlock(blockAnswerWords, plainText(cutPlain(f.wordsLabel, maxInputLabel)),
		plainText(cutPlain(f.wordsHint, maxInputHint)), words).WithOptional(choice != nil)
	blocks = append(blocks, input)
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      CallbackAnswer,
		Title:           plainText(cutPlain("Answer", maxModalTitle)),
		Submit:          plainText(cutPlain("Answer", maxModalTitle)),
		Close:           plainText(cutPlain("Cancel", maxModalTitle)),
		Blocks:          slack.Blocks{BlockSet: blocks},
		PrivateMetadata: meta.encode(),
	}
}

// optionInput is the input that chooses one of e's options: radio buttons, or a menu when there are more than radio
// buttons hold; nil for a question without options and for a security escalation (its message offers none either).
// left counts the options it could not list.
func optionInput(e *jobs.Escalation, f answerForm) (block *slack.InputBlock, left int) {
	if e.Trigger == jobs.TriggerSecurity || len(e.Options) == 0 {
		return nil, 0
	}
	rec := recommendedKey(e)
	var opts []*slack.OptionBlockObject
	var initial *slack.OptionBlockObject
	seen := map[string]bool{}
	for _, o := range e.Options {
		if seen[o.Key] {
			continue // one answer, one option
		}
		seen[o.Key] = true
		if strings.TrimSpace(o.Key) == "" || len(o.Key) > maxOptionValue || !utf8.ValidString(o.Key) ||
			o.Key == optionOwnWords || len(opts) == maxSelectOptions {
			left++
			continue
		}
		text, _ := optionText(e, o, o.Key == rec)
		opt := slack.NewOptionBlockObject(o.Key, plainText(cutPlain(text, maxOptionText)), nil)
		if o.Key == rec {
			initial = opt
		}
		opts = append(opts, opt)
	}
	if len(opts) == 0 {
		return nil, left
	}
	if initial != nil && !f.optionRequired {
		own := slack.NewOptionBlockObject(optionOwnWords, plainText(cutPlain(f.ownWords, maxOptionText)), nil)
		if len(opts) == maxSelectOptions {
			opts, left = opts[:len(opts)-1], left+1
		}
		opts = append(opts, own)
	}
	var el slack.BlockElement
	if len(opts) <= maxRadioOptions {
		radio := slack.NewRadioButtonsBlockElement(actionAnswerOption, opts...)
		radio.InitialOption = initial
		el = radio
	} else {
		menu := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Choose…"), actionAnswerOption, opts...)
		menu.InitialOption = initial
		el = menu
	}
	label := plainText(cutPlain(f.optionLabel, maxInputLabel))
	return slack.NewInputBlock(blockAnswerOption, label, nil, el).WithOptional(!f.optionRequired), left
}

// openAnswer opens the answer form for a click on a question's Answer… button, after the checks every click gets.
// The click's trigger_id expires 3 s after the click: nothing but those checks (store reads) comes before views.open.
func (s *Server) openAnswer(ctx context.Context, act ActionValue, user, channel, thread, ts, triggerID, responseURL string) {
	if !s.clickAllowed(ctx, act, user, channel, thread, ts, responseURL) {
		return
	}
	run, err := s.cfg.Store.Get(ctx, act.RunID)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		s.respond(ctx, responseURL, doesNotMatchText)
		return
	case err != nil:
		s.log.Warn("opening the answer form", "run_id", act.RunID, "err", err)
		s.respond(ctx, responseURL, unavailableText)
		return
	}
	e := run.Escalation(act.EscalationID)
	switch {
	case e == nil:
		s.respond(ctx, responseURL, doesNotMatchText)
		return
	case e.Resolution != nil:
		s.respond(ctx, responseURL, alreadyAnswered(e))
		return
	case run.Status.Terminal():
		s.respond(ctx, responseURL, fmt.Sprintf("Run %s has ended (%s): nothing to answer.", run.ID, run.Status))
		return
	}
	meta := answerMeta{RunID: run.ID, EscalationID: e.ID, Channel: channel, Thread: thread, TS: ts}
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := s.api.OpenViewContext(octx, triggerID, answerModal(run, e, meta)); err != nil {
		s.log.Warn("opening the answer form", "run_id", run.ID, "escalation", e.ID, "err", err)
		text := "The answer form did not open (" + err.Error() + "): press Answer… again, or reply in the thread."
		if msg := err.Error(); strings.Contains(msg, "expired_trigger_id") || strings.Contains(msg, "exchanged_trigger_id") {
			text = "The answer form took too long to open: press Answer… again."
		}
		s.respond(ctx, responseURL, text)
	}
}

// answerClick queues the opening of the answer form for a click on Answer…. A click from a view (the App Home) has no
// question message to check the click against, and is refused for now.
func (s *Server) answerClick(cb slack.InteractionCallback, act ActionValue, user string) error {
	trigger, responseURL := cb.TriggerID, cb.ResponseURL
	if cb.Container.Type == "view" {
		// A button on someone's Home: accepted only on the view orch last published as that very person's Home. The form
		// is then the one the question's message would open, checked against the same message.
		viewID := cb.Container.ViewID
		if cb.View.ID != viewID {
			viewID = ""
		}
		return s.urgent.submit(func(ctx context.Context) {
			ok, err := s.homeView(ctx, user, viewID)
			if err != nil || !ok {
				s.log.Warn("an Answer… click from a view that is not the clicker's Home", "run_id", act.RunID,
					"escalation", act.EscalationID, "user", user, "err", err)
				return
			}
			st, err := s.poster.state(ctx, act.RunID)
			if err != nil {
				s.log.Warn("opening the answer form from the Home", "run_id", act.RunID, "err", err)
				return
			}
			s.openAnswer(ctx, act, user, st.Channel, st.RootTS, st.Esc[act.EscalationID], trigger, "")
		})
	}
	channel, thread, ts := clickedMessage(cb)
	return s.urgent.submit(func(ctx context.Context) {
		s.openAnswer(ctx, act, user, channel, thread, ts, trigger, responseURL)
	})
}

// handleSubmission answers a view_submission over HTTP: an empty 200 closes the form, a response_action "errors"
// shows what is wrong in it.
func (s *Server) handleSubmission(w http.ResponseWriter, r *http.Request, cb slack.InteractionCallback) {
	resp := s.submission(r.Context(), cb)
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
	err := s.urgent.submit(func(ctx context.Context) {
		if resp := s.submission(ctx, cb); resp != nil {
			s.ack(client, req, resp)
			return
		}
		s.ack(client, req, nil)
	})
	if err != nil {
		s.ack(client, req, formError(generalBlock(cb.View), err.Error()))
	}
}

// submission resolves a question from the answer form, as a click would: the form's private_metadata is checked
// against the store, the person against ORCH_ALLOWED_USERS, and escalation.Resolve decides which answer wins. It
// returns nil when the question is answered (the form closes; the poster updates the question's message), or the
// errors to show in the form, when nothing changed.
func (s *Server) submission(ctx context.Context, cb slack.InteractionCallback) *slack.ViewSubmissionResponse {
	if cb.View.CallbackID != CallbackAnswer {
		s.log.Warn("ignoring the submission of a form orch did not make", "callback_id", cb.View.CallbackID)
		return nil
	}
	// The resolution happens before the ack, so that its errors can be shown in the form: Slack waits 3 s for it.
	ctx, cancel := context.WithTimeout(ctx, submitDeadline)
	defer cancel()
	f := readSubmittedForm(cb.View)
	user := cb.User.ID
	meta, err := decodeAnswerMeta(cb.View.PrivateMetadata)
	if err != nil {
		s.log.Warn("an answer form whose private_metadata orch did not write", "user", user, "err", err)
		return formError(f.general, mismatchText)
	}
	if !s.allowed(user) {
		s.refused(user, "answer", fmt.Sprintf("run %s escalation %s", meta.RunID, meta.EscalationID))
		return formError(f.general, notAllowedText)
	}
	if bad := f.check(); bad != nil {
		return bad
	}
	run, e, bad := s.formQuestion(ctx, f, meta)
	if bad != nil {
		return bad
	}
	if _, ok := e.OptionByKey(f.key); f.key != "" && !ok {
		return formError(f.optionBlock, fmt.Sprintf("%q is not an option of this question.", f.key))
	}
	saved, _, err := escalation.Resolve(ctx, s.cfg.Store, s.cfg.Queue, answerRequest(run.ID, e, user, f.key, f.words))
	return s.resolvedForm(ctx, f, meta, e, saved, err)
}

// submittedForm is what a person submitted in the answer form, and where in it an error is shown.
type submittedForm struct {
	general     string // the block an error about the whole answer is shown under
	optionBlock string // the block an error about the option is shown under
	key, words  string
	own         bool // the person chose to write their own answer
}

func readSubmittedForm(v slack.View) submittedForm {
	f := submittedForm{general: generalBlock(v), optionBlock: blockAnswerOption}
	if f.general != blockAnswerOption {
		f.optionBlock = f.general // the form lists no options: an option chosen anyway is forged
	}
	f.key, f.words, f.own = submitted(v)
	return f
}

// check refuses an answer too long or empty.
func (f submittedForm) check() *slack.ViewSubmissionResponse {
	if n := utf8.RuneCountInString(f.words); n > maxAnswerWords {
		return formError(blockAnswerWords, fmt.Sprintf("Your answer is %d characters long; at most %d fit. "+
			"Shorten it, or reply in the thread instead.", n, maxAnswerWords))
	}
	if f.key == "" && f.words == "" {
		if f.general == blockAnswerOption && !f.own {
			return formError(blockAnswerOption, "Choose an option, or write an answer below.")
		}
		return formError(blockAnswerWords, "Write an answer.")
	}
	return nil
}

// formQuestion finds the open question a form answers: its message must be the question's as orch posted it, and
// the question still open.
func (s *Server) formQuestion(ctx context.Context, f submittedForm, meta answerMeta) (*jobs.Run, *jobs.Escalation, *slack.ViewSubmissionResponse) {
	ok, err := s.poster.messageOf(ctx, meta.RunID, meta.EscalationID, meta.Channel, meta.Thread, meta.TS)
	if err != nil {
		s.log.Warn("checking an answer form", "run_id", meta.RunID, "err", err)
		return nil, nil, formError(f.general, unavailableText)
	}
	if !ok {
		s.log.Warn("an answer form whose message is not the question's", "run_id", meta.RunID, "escalation", meta.EscalationID)
		return nil, nil, formError(f.general, mismatchText)
	}
	run, err := s.cfg.Store.Get(ctx, meta.RunID)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		return nil, nil, formError(f.general, mismatchText)
	case err != nil:
		s.log.Warn("checking an answer form", "run_id", meta.RunID, "err", err)
		return nil, nil, formError(f.general, unavailableText)
	}
	e := run.Escalation(meta.EscalationID)
	switch {
	case e == nil:
		return nil, nil, formError(f.general, mismatchText)
	case e.Resolution != nil:
		return nil, nil, formError(f.general, alreadyAnswered(e))
	}
	return run, e, nil
}

// resolvedForm is the form's response to escalation.Resolve's outcome: nil (the form closes) when the answer is saved.
func (s *Server) resolvedForm(ctx context.Context, f submittedForm, meta answerMeta, e *jobs.Escalation, saved *jobs.Run, err error) *slack.ViewSubmissionResponse {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, escalation.ErrAlreadyResolved):
		if r, gerr := s.cfg.Store.Get(ctx, meta.RunID); gerr == nil && r.Escalation(e.ID) != nil && r.Escalation(e.ID).Resolution != nil {
			return formError(f.general, alreadyAnswered(r.Escalation(e.ID)))
		}
		return formError(f.general, "Already answered.")
	case errors.Is(err, escalation.ErrNoOpenEscalation):
		return formError(f.general, "Nothing to answer: "+err.Error())
	case errors.Is(err, escalation.ErrInvalid):
		if e.Trigger == jobs.TriggerGate {
			return formError(f.optionBlock, err.Error()) // words that name none of the gate's choices
		}
		return formError(f.general, err.Error())
	case errors.Is(err, jobs.ErrRunNotFound):
		return formError(f.general, mismatchText)
	case saved != nil:
		// The answer is saved; only the queueing of the run's next step failed, and the next worker start picks
		// it up. The form closes: asked again, the person would only be told the question is answered.
		s.log.Error("answered from the form, but the run could not be queued to continue", "run_id", meta.RunID, "err", err)
		return nil
	}
	s.log.Error("resolving from the answer form", "run_id", meta.RunID, "err", err)
	return formError(f.general, unavailableText)
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

// submitted reads the option chosen and the words written from a submitted form's state; own is whether the person
// chose to answer in words rather than by an option.
func submitted(v slack.View) (key, words string, own bool) {
	if v.State == nil {
		return "", "", false
	}
	if a, ok := v.State.Values[blockAnswerOption][actionAnswerOption]; ok {
		key = strings.TrimSpace(a.SelectedOption.Value)
	}
	if a, ok := v.State.Values[blockAnswerWords][actionAnswerWords]; ok {
		words = strings.TrimSpace(a.Value)
	}
	if key == optionOwnWords {
		return "", words, true
	}
	return key, words, false
}

// generalBlock is the input under which errors about the whole form are shown: the first one, the options when the
// form lists them.
func generalBlock(v slack.View) string {
	for _, b := range v.Blocks.BlockSet {
		if in, ok := b.(*slack.InputBlock); ok && in.BlockID == blockAnswerOption {
			return blockAnswerOption
		}
	}
	return blockAnswerWords
}

func formError(block, text string) *slack.ViewSubmissionResponse {
	return slack.NewErrorsViewSubmissionResponse(map[string]string{block: cutPlain(text, maxFormError)})
}

// alreadyAnswered tells who answered e, and how.
func alreadyAnswered(e *jobs.Escalation) string {
	res := e.Resolution
	who := res.By
	if res.Via == "slack" && slackUserID.MatchString(res.By) {
		who = "<@" + res.By + ">"
	}
	return fmt.Sprintf("Already answered by %s: %s.", cutPlain(who, 100), cutPlain(singleLine(escalation.Describe(e, res)), 150))
}
