package blocks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks/blockstest"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// questionKinds is one question of every kind orch asks a person.
func questionKinds() map[string]*jobs.Escalation {
	noOptions := needsHelp()
	noOptions.ID, noOptions.Options, noOptions.Recommendation = "e9", nil, ""
	return map[string]*jobs.Escalation{
		"needs help":  needsHelp(),
		"no options":  noOptions,
		"attempt cap": attemptCap(),
		"security":    security(),
		"gate": {ID: "e4", TaskID: "1.1", Trigger: jobs.TriggerGate, Question: "Ship it?",
			Options: []jobs.Option{{Key: "Y", Label: "Yes"}, {Key: "N", Label: "No"}}, Recommendation: "Y"},
		"chat": {ID: "e5", TaskID: "1.1", Trigger: jobs.TriggerChat, Question: "I renamed the column. Anything else?",
			Options: escalation.ChatOptions()},
		"approval": {ID: "e6", TaskID: "1.1", Trigger: jobs.TriggerApproval, Call: true, Question: "Run: git push --force",
			Options: escalation.ApprovalOptions("Bash(git push:*)")},
		"call question": {ID: "e7", TaskID: "1.1", Trigger: jobs.TriggerNeedsHelp, Call: true, Question: "Which cache?",
			Recommendation: "A", Options: []jobs.Option{{Key: "A", Label: "Redis (Recommended)"}, {Key: "B", Label: "LRU"}}},
		"loop": {ID: "e8", TaskID: "1.1", Trigger: jobs.TriggerLoop, Question: "The pipeline came back to review 5 times."},
	}
}

// Every question's message has an Answer… button (with Abort, and Retry where a task failed, within Block Kit's
// limits); the answered message has no button at all.
func TestAnswerButtonOnEveryQuestion(t *testing.T) {
	for name, e := range questionKinds() {
		t.Run(name, func(t *testing.T) {
			r := parkedRun(e)
			m := EscalationMessage(r, e, "")
			checkMessage(t, m)
			found := false
			for _, b := range buttons(m) {
				if b.ActionID != ActionAnswer {
					continue
				}
				found = true
				v, err := DecodeAction(b.ActionID, b.Value)
				if err != nil || v != (ActionValue{RunID: runID, EscalationID: e.ID, Kind: KindAnswer}) {
					t.Errorf("Answer… decodes as %+v, %v", v, err)
				}
				if b.Text.Text != "Answer…" {
					t.Errorf("button text %q", b.Text.Text)
				}
			}
			if !found {
				t.Fatalf("no Answer… button among %v", buttonTexts(m))
			}
			done := AnsweredMessage(r, answered(e, jobs.Resolution{Type: jobs.ResolveAnswer, Text: "ok", By: "U0123ABCD", Via: "slack"}))
			if bs := buttons(done); len(bs) != 0 {
				t.Errorf("the answered message keeps %d buttons", len(bs))
			}
		})
	}
}

// The form for each kind of question: the options the question takes (the recommended one marked and chosen
// already, and a way to answer in words instead), words worded for what they do, and what is optional.
func TestAnswerModal(t *testing.T) {
	type want struct {
		options  []string // option values, in order
		initial  string
		required bool   // the option input
		words    string // the words' label
		hint     string // in the words' hint
	}
	wants := map[string]want{
		"needs help":    {[]string{"A", "B", "C", optionOwnWords}, "B", false, "Guidance for the agent", "kept on record"},
		"no options":    {nil, "", false, "Guidance for the agent", "next attempt"},
		"attempt cap":   {nil, "", false, "Guidance for the agent", "next attempt"},
		"security":      {nil, "", false, "Guidance for the agent", "Rotate the credential"},
		"gate":          {[]string{"Y", "N"}, "Y", true, "Note", "the pipeline goes the way you choose"},
		"chat":          {[]string{"/done", "/approve", "/reject"}, "", false, "Your reply to the agent", "One turn"},
		"approval":      {[]string{"A", "B", "C"}, "", false, "Reason to deny the call", "deny the call with your reason"},
		"call question": {[]string{"A", "B", optionOwnWords}, "A", false, "Or answer in your own words", "answer to its question"},
		"loop":          {nil, "", false, "Guidance for the agent", "next attempt"},
	}
	for name, e := range questionKinds() {
		t.Run(name, func(t *testing.T) {
			w := wants[name]
			r := parkedRun(e)
			meta := AnswerMeta{RunID: r.ID, EscalationID: e.ID, Channel: "C1", Thread: "1.1", TS: "1.2"}
			v := AnswerModal(r, e, meta)
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var back slack.View // as Slack hands it back
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if back.CallbackID != CallbackAnswer || back.Title.Text != "Answer" || back.Type != slack.VTModal {
				t.Errorf("callback %q, title %q, type %q", back.CallbackID, back.Title.Text, back.Type)
			}
			if got, err := DecodeAnswerMeta(back.PrivateMetadata); err != nil || got != meta {
				t.Errorf("private_metadata %q reads back as %+v, %v", back.PrivateMetadata, got, err)
			}
			if !strings.Contains(string(data), e.Question[:min(10, len(e.Question))]) || !strings.Contains(string(data), r.ID) {
				t.Errorf("the form does not show the question and the run:\n%s", data)
			}
			inputs := blockstest.Inputs(back.Blocks.BlockSet)
			words := inputs[blockAnswerWords]
			if words == nil {
				t.Fatalf("no words input: %s", data)
			}
			el := words.Element.(*slack.PlainTextInputBlockElement)
			if !el.Multiline || el.MaxLength != maxAnswerWords || el.ActionID != actionAnswerWords {
				t.Errorf("words input = %+v", el)
			}
			if words.Label.Text != w.words || !strings.Contains(words.Hint.Text, w.hint) {
				t.Errorf("words labelled %q, hint %q; want %q and %q", words.Label.Text, words.Hint.Text, w.words, w.hint)
			}
			opt := inputs[blockAnswerOption]
			if (opt != nil) != (w.options != nil) {
				t.Fatalf("option input %v, want options %v", opt != nil, w.options)
			}
			if words.Optional != (opt != nil) {
				t.Errorf("words optional = %v with an option input %v", words.Optional, opt != nil)
			}
			if opt == nil {
				return
			}
			if opt.Optional == w.required {
				t.Errorf("option input optional = %v, want required %v", opt.Optional, w.required)
			}
			kind, opts, initial := blockstest.Options(t, opt)
			if kind != "radio_buttons" {
				t.Errorf("%d options in a %s, want radio buttons", len(opts), kind)
			}
			var values []string
			for _, o := range opts {
				values = append(values, o.Value)
			}
			if strings.Join(values, " ") != strings.Join(w.options, " ") {
				t.Errorf("options %q, want %q", values, w.options)
			}
			switch {
			case w.initial == "" && initial != nil:
				t.Errorf("option %q chosen already, want none", initial.Value)
			case w.initial != "" && (initial == nil || initial.Value != w.initial):
				t.Errorf("initial option %+v, want %s", initial, w.initial)
			case initial != nil && !strings.Contains(strings.ToLower(initial.Text.Text), "recommended"):
				t.Errorf("the recommendation %q is not marked", initial.Text.Text)
			}
		})
	}
}

// Beyond ten options (Slack's limit for radio buttons) the form lists them in a menu; every label is cut to an option
// text's 75 characters.
func TestAnswerModalManyOptions(t *testing.T) {
	for _, tt := range []struct {
		n    int
		kind string
	}{{9, "radio_buttons"}, {10, "static_select"}, {26, "static_select"}} {
		e := manyOptions(tt.n) // the recommendation is chosen already: one more option answers in words
		e.Options[0].Label = strings.Repeat("long label ", 20)
		v := AnswerModal(parkedRun(e), e, AnswerMeta{})
		kind, opts, initial := blockstest.Options(t, blockstest.Inputs(v.Blocks.BlockSet)[blockAnswerOption])
		if kind != tt.kind || len(opts) != tt.n+1 {
			t.Errorf("%d options: %d in a %s, want %d in a %s", tt.n, len(opts), kind, tt.n+1, tt.kind)
		}
		if initial == nil || initial.Value != "C" {
			t.Errorf("%d options: initial %+v, want C", tt.n, initial)
		}
		for _, o := range opts {
			if n := textLen(o.Text.Text); n > maxOptionText {
				t.Errorf("option text %q is %d long", o.Text.Text, n)
			}
		}
	}
}
