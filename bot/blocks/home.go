package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The Home tab: each person's own view of orch. Slack's limits on it, and what it lists at most.
const (
	// maxHomeBlocks is Slack's limit on a Home tab view's blocks.
	maxHomeBlocks = 100
	// MaxHomeQuestions and MaxHomeRuns bound the two lists; the rest are counted.
	MaxHomeQuestions = 10
	MaxHomeRuns      = 10
	// maxHomeQuestion bounds a question's text on the Home: its thread has it whole.
	maxHomeQuestion = 500
	// maxHomeOptionBlocks bounds the blocks of one question's options (button rows, the list of long labels, the line
	// naming the options that are no button).
	maxHomeOptionBlocks = 3
)

// Question is a question that waits for a person, with its run.
type Question struct {
	Run        *jobs.Run
	Escalation *jobs.Escalation
}

// Home is what a Home tab shows, read from the store.
type Home struct {
	Viewer    string
	Health    string // plain words
	Notice    string // plain words
	CanAnswer bool
	Questions []Question
	More      int               // open questions not shown
	Runs      []*jobs.Run       // the viewer's latest runs, newest first
	Links     map[string]string // run id → its thread
	Pages     map[string]string // run id → its page in the web view, when there is one
	Now       time.Time
}

// HomeView is a person's Home tab: a notice when there is one, the deployment's health, the questions waiting on them
// (oldest first, each with its run, task, question, how long it has waited, a link to its thread, and the buttons of
// its thread message: the answers it has, Answer… and the link to its run's page), and their latest runs with their
// status and threads.
func HomeView(h Home) slack.HomeTabViewRequest {
	blocks := []slack.Block{headerBlock("orch")}
	if strings.TrimSpace(h.Notice) != "" {
		blocks = append(blocks, sectionBlock(":information_source: "+escapeCut(h.Notice, maxSectionText-50, true)))
	}
	blocks = append(blocks, contextBlock(":stethoscope: "+escapeCut(singleLine(h.Health), maxLine*2, false)),
		slack.NewDividerBlock())

	// What follows the questions, rendered first so that the questions know how many blocks are left.
	tail := []slack.Block{slack.NewDividerBlock(), sectionBlock("*Your recent runs*")}
	lines := make([]string, 0, len(h.Runs))
	for _, r := range h.Runs {
		lines = append(lines, homeRunLine(r, h.Links[r.ID]))
	}
	if len(lines) == 0 {
		lines = append(lines, "_You have started no run yet: `/orch run PLAN` starts one._")
	}
	tail = append(tail, packLines(lines, 2, func(n int) string {
		return fmt.Sprintf("_… and %s_", jobs.Count(n, "more run"))
	})...)

	blocks = append(blocks, sectionBlock(fmt.Sprintf("*Waiting on you* (%d)", len(h.Questions)+h.More)))
	switch {
	case !h.CanAnswer:
		blocks = append(blocks, contextBlock("_You are not in ORCH_ALLOWED_USERS, so no question waits on you here._"))
	case len(h.Questions) == 0:
		blocks = append(blocks, contextBlock("_Nothing waits on you._"))
	}
	for i, q := range h.Questions {
		// Each question after this one needs at least its two sections and its controls, and the count of the rest
		// one more block.
		room := maxHomeBlocks - len(blocks) - len(tail) - 3*(len(h.Questions)-i-1) - 1
		blocks = append(blocks, homeQuestion(q, i, h.Links[q.Run.ID], h.Pages[q.Run.ID], h.Now, room)...)
	}
	if h.More > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf("_… and %s: the oldest are shown first._",
			jobs.Count(h.More, "more question"))))
	}
	blocks = append(blocks, tail...)
	if len(blocks) > maxHomeBlocks { // the budget above keeps this from happening; this keeps Slack's limit a promise
		blocks = append(blocks[:maxHomeBlocks-1:maxHomeBlocks-1], contextBlock("_… more not shown_"))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
}

// homeQuestion is the n-th open question on the Home, in at most room blocks (at least three): what and where, the
// question, the option buttons, and the answers it has besides (escalation.AnswersOf: Retry only where a task failed),
// Abort, Answer… and the link to its run's page (page, "" for none). Its blocks' ids are its own: a view's block ids
// must differ, and every question's option rows would otherwise be "orch_options_1".
func homeQuestion(q Question, n int, link, page string, now time.Time, room int) []slack.Block {
	r, e := q.Run, q.Escalation
	label := escapeCut(taskLabel(r, e.TaskID), maxLine, false)
	if link != "" {
		label = "<" + link + "|" + strings.ReplaceAll(label, "|", "¦") + ">"
	}
	head := fmt.Sprintf(":raising_hand: *%s* · %s · run %s · waiting %s", label,
		escapeCut(e.Trigger.Describe(e.Name), 100, false), inlineCode(r.ID, maxActionField),
		HumanDuration(now.Sub(e.CreatedAt)))
	text := "_No question text._"
	if qt := strings.TrimSpace(e.Question); qt != "" {
		text = escapeCut(qt, maxHomeQuestion, true)
	}
	blocks := []slack.Block{sectionBlock(head), sectionBlock(text)}
	answers := escalation.AnswersOf(e)
	if len(answers.Options) > 0 {
		options, list := optionBlocks(r, e, min(maxHomeOptionBlocks, room-3), true)
		if list != nil {
			blocks = append(blocks, list)
		}
		for i, b := range options {
			if a, ok := b.(*slack.ActionBlock); ok {
				a.BlockID = fmt.Sprintf("orch_home_%d_options_%d", n+1, i+1)
			}
		}
		blocks = append(blocks, options...)
	}
	var controls []slack.BlockElement
	answer := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindAnswer}
	if checkActionValue(answer) == nil { // else ids no button can carry: the thread and the terminal answer it
		if answers.Retry {
			controls = append(controls, button(ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindRetry}, "Retry", ""))
		}
		controls = append(controls,
			button(ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindAbort}, "Abort", slack.StyleDanger).
				WithConfirm(abortConfirm(r)),
			button(answer, "Answer…", ""))
	}
	if b := pageButton(page); b != nil {
		controls = append(controls, b)
	}
	if len(controls) == 0 {
		return blocks
	}
	return append(blocks, slack.NewActionBlock(fmt.Sprintf("orch_home_%d_controls", n+1), controls...))
}

// homeRunLine is one of the viewer's runs: its id (a link to its thread), plan and status.
func homeRunLine(r *jobs.Run, link string) string {
	id := inlineCode(r.ID, maxActionField)
	if link != "" {
		id = "<" + link + "|" + escapeCut(r.ID, maxActionField, false) + ">"
	}
	return fmt.Sprintf("%s *%s* · %s", id, escapeCut(PlanTitle(r), 100, false), runStatusLine(r))
}
