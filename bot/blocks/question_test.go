package blocks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/bot/blocks/blockstest"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
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

// workedQuestion is the agent's question after it changed files, as the worker reports them: git's --name-status
// lines and --stat, some of the names the agent's own hostile choices.
func workedQuestion() *jobs.Escalation {
	e := needsHelp()
	e.Files = []string{"M\tapi/cache.go", "A\t*bold* <!channel> & `tick`.go", "D\t" + strings.Repeat("very/long/", 40) + "name.go",
		"A\tapi/cache_test.go", "M\tgo.mod", "M\tgo.sum", "A\tdocs/cache.md", "… and 12 more"}
	e.Diff = " api/cache.go      | 40 ++++++++++----\n api/cache_test.go | 80 ++++++++++++++++\n" +
		" 19 files changed, 170 insertions(+), 12 deletions(-)\n"
	return e
}

// A question shows what the agent did so far: the diffstat's summary and its first files, each name as inline code,
// bounded and escaped whatever the agent named them, the rest counted. The answered message and the form keep it.
func TestQuestionShowsWhatTheAgentDid(t *testing.T) {
	e := workedQuestion()
	r := parkedRun(e)
	m := EscalationMessage(r, e, "")
	checkMessage(t, m)
	var line string
	for _, b := range m.Blocks {
		if c, ok := b.(*slack.ContextBlock); ok {
			for _, el := range c.ContextElements.Elements {
				if tx, ok := el.(*slack.TextBlockObject); ok && strings.Contains(tx.Text, "So far") {
					line = tx.Text
				}
			}
		}
	}
	if line == "" {
		t.Fatalf("the question does not say what the agent did:\n%s", allText(m))
	}
	for _, want := range []string{"19 files changed, 170 insertions(+), 12 deletions(-)", "`api/cache.go` modified",
		"`*bold* &lt;!channel&gt; &amp; 'tick'.go` added", "`api/cache_test.go` added", "`go.mod` modified",
		"and 14 more files"} {
		if !strings.Contains(line, want) {
			t.Errorf("the excerpt lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "go.sum") || strings.Contains(line, "docs/cache.md") {
		t.Errorf("the excerpt names more than %d files:\n%s", maxExcerptFiles, line)
	}
	if !strings.Contains(line, "very/long/") || strings.Contains(line, strings.Repeat("very/long/", 9)) {
		t.Errorf("the long name is not cut to %d characters:\n%s", maxExcerptName, line)
	}
	// Every name is inside its inline code: nothing of it can format the line.
	outside := strings.Replace(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, ""), "*So far:*", "", 1)
	if strings.ContainsAny(outside, "*<>&_~") {
		t.Errorf("a name escapes its code span: %q", outside)
	}
	if n := textLen(line); n > 1000 {
		t.Errorf("the excerpt is %d characters long", n)
	}
	for name, v := range map[string]string{
		"answered": allText(AnsweredMessage(r, answered(workedQuestion(), jobs.Resolution{Type: jobs.ResolveChoose, Key: "B",
			By: "U0123ABCD", Via: "slack"}))),
		"form": jsonText(t, AnswerModal(r, e, AnswerMeta{}).Blocks),
	} {
		if !strings.Contains(v, "19 files changed") {
			t.Errorf("the %s does not say what the agent did", name)
		}
	}

	// Nothing to say: no line.
	for _, tc := range []struct {
		files []string
		diff  string
	}{{nil, ""}, {nil, "not a diffstat"}, {[]string{" "}, "\n"}} {
		e := needsHelp()
		e.Files, e.Diff = tc.files, tc.diff
		if all := allText(EscalationMessage(parkedRun(e), e, "")); strings.Contains(all, "So far") {
			t.Errorf("files %q, diff %q: the question says %q", tc.files, tc.diff, all)
		}
	}
	// Files alone, or the summary alone.
	e = needsHelp()
	e.Files = []string{"M\tmain.go"}
	if all := allText(EscalationMessage(parkedRun(e), e, "")); !strings.Contains(all, "*So far:* `main.go` modified") {
		t.Errorf("files alone: %s", all)
	}
	e = needsHelp()
	e.Diff = " main.go | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)"
	if all := allText(EscalationMessage(parkedRun(e), e, "")); !strings.Contains(all, "*So far:* 1 file changed, 1 insertion(+), 1 deletion(-)") {
		t.Errorf("the summary alone: %s", all)
	}
}
