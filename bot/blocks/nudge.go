package blocks

import (
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// Nudges are the reminders of question e of run r, which has waited for an answer that long: one announces it again
// in the run's thread, direct goes to whoever started the run. link leads to the question's message ("" when the bot
// does not know its workspace's address).
func Nudges(r *jobs.Run, e *jobs.Escalation, waited time.Duration, link string) (thread, direct Message) {
	question := escapeCut(safetext.HeadLine(e.Question), maxLine, false)
	where := ""
	if link != "" {
		where = " " + slackLink(link, "Answer it")
	}
	label := escapeCut(taskLabel(r, e.TaskID), maxLine, false)
	text := fmt.Sprintf(":bell: Still waiting for an answer after %s: *%s* — %s%s", HumanDuration(waited.Round(time.Minute)),
		label, question, where)
	fallback := fmt.Sprintf("Still waiting for an answer after %s: %s", HumanDuration(waited.Round(time.Minute)), safetext.HeadLine(e.Question))
	thread = newMessage(escapeCut(fallback, maxFallbackText, false), []slack.Block{sectionBlock(text)})
	dm := fmt.Sprintf(":bell: Run %s (%s) has waited %s for your answer: *%s* — %s%s", inlineCode(r.ID, maxActionField),
		escapeCut(PlanTitle(r), maxLine, false), HumanDuration(waited.Round(time.Minute)), label, question, where)
	return thread, newMessage(thread.Text, []slack.Block{sectionBlock(dm)})
}
