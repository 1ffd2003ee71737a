package blocks

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks/blockstest"
	"github.com/orchrun/orch/escalation"
)

const testPage = "https://orch.example.com/runs/" + runID

// A question's buttons are the answers it has (escalation.AnswersOf) and no more: Retry only where a task failed (a
// cap, a loop, a security finding, a conversation's next turn), never on an agent's question, a gate or a call the
// agent paused at; Answer… and Abort on every one; and the link to the run's page when there is one. Its thread
// message, its place on the Home and its answer form agree.
func TestQuestionButtonsAreTheAnswersItHas(t *testing.T) {
	controls := map[string][]string{
		"needs help":    {ActionAnswer, ActionAbort},
		"no options":    {ActionAnswer, ActionAbort},
		"gate":          {ActionAnswer, ActionAbort},
		"approval":      {ActionAnswer, ActionAbort},
		"call question": {ActionAnswer, ActionAbort},
		"attempt cap":   {ActionAnswer, ActionRetry, ActionAbort},
		"security":      {ActionAnswer, ActionRetry, ActionAbort},
		"chat":          {ActionAnswer, ActionRetry, ActionAbort},
		"loop":          {ActionAnswer, ActionRetry, ActionAbort},
	}
	for name, e := range questionKinds() {
		t.Run(name, func(t *testing.T) {
			want, ok := controls[name]
			if !ok {
				t.Fatalf("no expectation for %q", name)
			}
			answers := escalation.AnswersOf(e)
			var options []string
			for _, o := range answers.Options {
				options = append(options, ActionChoose+":"+o.Key)
			}
			r := parkedRun(e)
			for _, page := range []string{"", testPage} {
				wantIDs := append(slices.Clone(options), want...)
				if page != "" {
					wantIDs = append(wantIDs, ActionPage)
				}
				m := EscalationMessage(r, e, page)
				checkMessage(t, m)
				if got := actionIDs(buttons(m)); !slices.Equal(got, wantIDs) {
					t.Errorf("page %q: thread buttons %q, want %q", page, got, wantIDs)
				}

				// The Home shows the same answers, its controls in their own order.
				home := HomeView(Home{Viewer: "U0123ABCD", CanAnswer: true, Questions: []Question{{r, e}},
					Pages: map[string]string{r.ID: page}, Now: t0})
				checkHome(t, home)
				got := actionIDs(blockstest.Buttons(home.Blocks.BlockSet))
				slices.Sort(got)
				slices.Sort(wantIDs)
				if !slices.Equal(got, wantIDs) {
					t.Errorf("page %q: Home buttons %q, want %q", page, got, wantIDs)
				}
			}

			// The form lists the question's options alone: no choice it does not have.
			v := AnswerModal(r, e, AnswerMeta{RunID: r.ID, EscalationID: e.ID, Channel: "C1", Thread: "1.1", TS: "1.2"})
			if in := blockstest.Inputs(v.Blocks.BlockSet)[blockAnswerOption]; in != nil {
				_, opts, _ := blockstest.Options(t, in)
				for _, o := range opts {
					if _, ok := e.OptionByKey(o.Value); (!ok || len(answers.Options) == 0) && o.Value != optionOwnWords {
						t.Errorf("the form offers %q, which the question does not have", o.Value)
					}
				}
			}
		})
	}
}

// The run's page is a link button: its url, no value, on the question's message and on the Home, only when there is a
// page. Anything that is not an http(s) link Slack can open makes no button.
func TestQuestionLinksTheRunPage(t *testing.T) {
	e := attemptCap()
	r := parkedRun(e)
	page := func(bs []*slack.ButtonBlockElement) *slack.ButtonBlockElement {
		for _, b := range bs {
			if b.ActionID == ActionPage {
				return b
			}
		}
		return nil
	}
	b := page(buttons(EscalationMessage(r, e, testPage)))
	if b == nil || b.URL != testPage || b.Value != "" || b.Text.Text != "Open run page" {
		t.Fatalf("page button = %+v, want a link to %s", b, testPage)
	}
	home := HomeView(Home{Viewer: "U0123ABCD", CanAnswer: true, Questions: []Question{{r, e}},
		Pages: map[string]string{r.ID: testPage}, Now: t0})
	if b := page(blockstest.Buttons(home.Blocks.BlockSet)); b == nil || b.URL != testPage {
		t.Errorf("the Home's page button = %+v, want a link to %s", b, testPage)
	}
	for _, bad := range []string{"", "javascript:alert(1)", "orch.example.com/runs/x", "https://orch.example.com/runs/a b",
		"https://orch.example.com/runs/<x>", "https://orch.example.com/" + strings.Repeat("x", maxButtonURL)} {
		if b := page(buttons(EscalationMessage(r, e, bad))); b != nil {
			t.Errorf("page %q made a button: %+v", bad, b)
		}
	}
	// A question whose ids no button can carry still links its page.
	odd := attemptCap()
	odd.ID = "e 1"
	m := EscalationMessage(parkedRun(odd), odd, testPage)
	if got := actionIDs(buttons(m)); fmt.Sprint(got) != fmt.Sprint([]string{ActionPage}) {
		t.Errorf("buttons %q, want the page's alone", got)
	}
}

func actionIDs(bs []*slack.ButtonBlockElement) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ActionID)
	}
	return out
}
