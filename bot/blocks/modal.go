package blocks

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

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

// AnswerMeta is the form's private_metadata: the question it answers and where the question's message is. Like a
// button's value it is only a claim: a submission checks it against the store again.
type AnswerMeta struct {
	RunID        string `json:"run"`
	EscalationID string `json:"esc"`
	Channel      string `json:"channel"`
	Thread       string `json:"thread"`
	TS           string `json:"ts"`
}

// Encode writes m as private_metadata.
func (m AnswerMeta) Encode() string {
	data, _ := json.Marshal(m) // strings only: it cannot fail
	return string(data)
}

// DecodeAnswerMeta reads private_metadata back, strictly: every field present and shaped as orch writes it.
func DecodeAnswerMeta(s string) (AnswerMeta, error) {
	var m AnswerMeta
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

// AnswerModal is the answer form of escalation e: the question as its message shows it, what the run is, the options
// (the recommended one marked and chosen already) and a box for words.
func AnswerModal(r *jobs.Run, e *jobs.Escalation, meta AnswerMeta) slack.ModalViewRequest {
	f := answerFormFor(e)
	blocks := escalationHead(r, e, taskLabel(r, e.TaskID), questionSuffix(e))
	blocks = append(blocks, contextBlock(fmt.Sprintf("Plan: %s · started by %s", escapeCut(PlanTitle(r), maxLine, false),
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
		PrivateMetadata: meta.Encode(),
	}
}

// optionInput is the input that chooses one of the options e has (escalation.AnswersOf), and nothing else: radio
// buttons, or a menu when there are more than radio buttons hold; nil for a question without options, a security
// escalation among them (its message offers none either). left counts the options it could not list.
func optionInput(e *jobs.Escalation, f answerForm) (block *slack.InputBlock, left int) {
	options := escalation.AnswersOf(e).Options
	if len(options) == 0 {
		return nil, 0
	}
	rec := recommendedKey(e)
	var opts []*slack.OptionBlockObject
	var initial *slack.OptionBlockObject
	seen := map[string]bool{}
	for _, o := range options {
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
	el := optionElement(opts, initial)
	label := plainText(cutPlain(f.optionLabel, maxInputLabel))
	return slack.NewInputBlock(blockAnswerOption, label, nil, el).WithOptional(!f.optionRequired), left
}

// optionElement offers opts as radio buttons, or as a menu when there are more than radio buttons hold; initial is
// the option chosen already (nil for none).
func optionElement(opts []*slack.OptionBlockObject, initial *slack.OptionBlockObject) slack.BlockElement {
	if len(opts) <= maxRadioOptions {
		radio := slack.NewRadioButtonsBlockElement(actionAnswerOption, opts...)
		radio.InitialOption = initial
		return radio
	}
	menu := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Choose…"), actionAnswerOption, opts...)
	menu.InitialOption = initial
	return menu
}

// Submission is what a person submitted in the answer form: the option chosen and the words written, and where in
// the form an error about them is shown.
type Submission struct {
	Key, Words  string
	own         bool   // the person chose to write their own answer
	general     string // the block an error about the whole answer is shown under
	optionBlock string // the block an error about the option is shown under
}

// ReadSubmission reads a submitted answer form.
func ReadSubmission(v slack.View) Submission {
	f := Submission{general: generalBlock(v), optionBlock: blockAnswerOption}
	if f.general != blockAnswerOption {
		f.optionBlock = f.general // the form lists no options: an option chosen anyway is forged
	}
	f.Key, f.Words, f.own = submitted(v)
	return f
}

// Check refuses an answer too long or empty.
func (f Submission) Check() *slack.ViewSubmissionResponse {
	if n := utf8.RuneCountInString(f.Words); n > maxAnswerWords {
		return formError(blockAnswerWords, fmt.Sprintf("Your answer is %d characters long; at most %d fit. "+
			"Shorten it, or reply in the thread instead.", n, maxAnswerWords))
	}
	if f.Key == "" && f.Words == "" {
		if f.general == blockAnswerOption && !f.own {
			return formError(blockAnswerOption, "Choose an option, or write an answer below.")
		}
		return formError(blockAnswerWords, "Write an answer.")
	}
	return nil
}

// Error is the form's response that shows text as what is wrong with the whole answer.
func (f Submission) Error(text string) *slack.ViewSubmissionResponse {
	return formError(f.general, text)
}

// OptionError is the form's response that shows text as what is wrong with the option chosen.
func (f Submission) OptionError(text string) *slack.ViewSubmissionResponse {
	return formError(f.optionBlock, text)
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

// AlreadyAnswered tells who answered e, and how.
func AlreadyAnswered(e *jobs.Escalation) string {
	res := e.Resolution
	who := res.By
	if res.Via == "slack" && slackUserID.MatchString(res.By) {
		who = "<@" + res.By + ">"
	}
	return fmt.Sprintf("Already answered by %s: %s.", cutPlain(who, 100), cutPlain(singleLine(escalation.Describe(e, res)), 150))
}
