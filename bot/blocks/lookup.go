package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// The answers of the lookup commands (/orch status, history, costs, questions, logs): a person's own view, sent
// through the command's response_url.
const (
	// maxEcho bounds what of a person's input an answer says back to them.
	maxEcho = 80
	// lookupSections bounds the sections a list of an answer takes: its lines are bounded, so a few always hold it.
	lookupSections = 5
)

// Echo is a person's input said back to them: one line, bounded, as inline code.
func Echo(s string) string { return inlineCode(s, maxEcho) }

// StatusText answers /orch status: a run's status in a few lines; its open question is shown when showQuestion (the
// reader may see it), else only that there is one, and where.
func StatusText(r *jobs.Run, showQuestion bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s (%s): *%s*", inlineCode(r.ID, maxActionField), escapeCut(PlanTitle(r), maxLine, false),
		escapeCut(string(r.Status), 40, false))
	if r.Reason != "" {
		fmt.Fprintf(&b, " — %s", escapeCut(safetext.HeadLine(r.Reason), maxLine, false))
	}
	done := 0
	for _, t := range r.Tasks {
		if t.Status.Done() {
			done++
		}
	}
	fmt.Fprintf(&b, "\n%d of %d tasks done", done, len(r.Tasks))
	if t := r.Current(); t != nil && !r.Status.Terminal() {
		fmt.Fprintf(&b, "; now: %s (%s)", escapeCut(t.ID+" "+t.Title, maxLine, false), escapeCut(string(t.Status), 40, false))
	}
	if e := r.OpenEscalation(); e != nil {
		if showQuestion {
			fmt.Fprintf(&b, "\nWaiting for an answer (%s): %s", escapeCut(string(e.Trigger), 40, false), questionHead(e))
		} else {
			b.WriteString("\nWaiting for an answer: the question is in the run's thread, for the people of its channel.")
		}
	}
	return b.String()
}

// HistoryMessage answers /orch history: the runs started in a channel, newest first (more: there are more than these),
// each with its status, who started it, when, how long it took, its cost and a link to its thread (links, by run id).
func HistoryMessage(runs []*jobs.Run, more bool, links map[string]string, now time.Time) Message {
	lines := make([]string, 0, len(runs))
	for _, r := range runs {
		lines = append(lines, historyLine(r, links[r.ID], now))
	}
	head := fmt.Sprintf("*Runs started in this channel*, newest first (%d)", len(runs))
	if more {
		head = fmt.Sprintf("*The %d latest runs started in this channel*, newest first", len(runs))
	}
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	return newMessage(fmt.Sprintf("%s in this channel", jobs.Count(len(runs), "run")), blocks)
}

// historyLine is one run of /orch history: status, id, title, who started it, when, how long, cost, thread.
func historyLine(r *jobs.Run, link string, now time.Time) string {
	usd, _, _ := r.Cost()
	took := "took " + HumanDuration(runElapsed(r))
	if !r.Status.Terminal() {
		took = HumanDuration(r.Duration(now)) + " so far"
	}
	parts := []string{
		runEmoji(r.Status) + " " + inlineCode(r.ID, maxActionField) + " *" + escapeCut(runTitle(r), 100, false) + "*",
		"by " + startedBy(r.Origin),
		startTime(r.CreatedAt),
		took,
		formatUSD(usd),
	}
	if link != "" {
		parts = append(parts, slackLink(link, "thread"))
	}
	return strings.Join(parts, " · ")
}

// RunCostsMessage answers /orch costs RUN_ID: one run's costs as `orch costs RUN_ID` prints them: per task the
// attempts, the agent's tokens and dollars and the brain's calls, tokens and dollars; the run's sums; per model; the
// total.
func RunCostsMessage(r *jobs.Run) Message {
	c := r.Costs()
	head := fmt.Sprintf("*Costs of run %s* (%s): *%s* in all\n%s\n%s", inlineCode(r.ID, maxActionField),
		escapeCut(string(r.Status), 40, false), formatUSD(c.TotalUSD()), agentCost(c.Agent), brainCost(c.Brain))
	blocks := []slack.Block{sectionBlock(head)}
	tasks := make([]string, 0, len(c.Tasks))
	for _, t := range c.Tasks {
		tasks = append(tasks, fmt.Sprintf("*%s* · %s · %s · %s", escapeCut(taskLabel(r, t.TaskID), 120, false),
			jobs.Count(t.Attempts, "attempt"), agentCost(t.Agent), brainCost(t.Brain)))
	}
	if len(tasks) == 0 {
		tasks = append(tasks, "_No tasks._")
	}
	blocks = append(blocks, sectionBlock("*Per task*"))
	blocks = append(blocks, packLines(tasks, lookupSections, func(n int) string {
		return fmt.Sprintf("_… and %s_", jobs.Count(n, "more task"))
	})...)
	if len(c.Models) > 0 {
		models := make([]string, 0, len(c.Models))
		for _, m := range c.Models {
			models = append(models, fmt.Sprintf("%s · %s · %s tokens in, %s out · %s", inlineCode(m.Scope, 100),
				jobs.Count(m.Calls, "call"), groupDigits(m.InputTokens), groupDigits(m.OutputTokens), formatUSD(m.CostUSD)))
		}
		blocks = append(blocks, sectionBlock("*Per model*"))
		blocks = append(blocks, packLines(models, 2, func(n int) string {
			return fmt.Sprintf("_… and %s_", jobs.Count(n, "more model"))
		})...)
	}
	text := fmt.Sprintf("Run %s cost %s", r.ID, formatUSD(c.TotalUSD()))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// ChannelCostsMessage answers /orch costs: the costs of a channel's latest runs as `orch costs` prints them, and their
// total.
func ChannelCostsMessage(runs []*jobs.Run, more bool) Message {
	var total float64
	lines := make([]string, 0, len(runs))
	for _, r := range runs {
		c := r.Costs()
		total += c.TotalUSD()
		lines = append(lines, fmt.Sprintf("%s %s *%s* · %s · %s · %s", runEmoji(r.Status), inlineCode(r.ID, maxActionField),
			formatUSD(c.TotalUSD()), escapeCut(runTitle(r), 80, false), agentCost(c.Agent), brainCost(c.Brain)))
	}
	head := fmt.Sprintf("*Costs of the runs started in this channel*, newest first: *%s* for %s", formatUSD(total),
		jobs.Count(len(runs), "run"))
	if more {
		head = fmt.Sprintf("*Costs of the %d latest runs started in this channel*, newest first: *%s* in all",
			len(runs), formatUSD(total))
	}
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	blocks = append(blocks, contextBlock(fmt.Sprintf("*Total:* %s · `/orch costs RUN_ID` breaks a run down per task",
		formatUSD(total))))
	text := fmt.Sprintf("%s in this channel cost %s", jobs.Count(len(runs), "run"), formatUSD(total))
	return newMessage(text, blocks)
}

// agentCost is the agent's share of a cost: "agent 1,200 tokens in, 300 out, $0.0120".
func agentCost(c jobs.CostLine) string {
	return fmt.Sprintf("agent %s tokens in, %s out, %s", groupDigits(c.InputTokens), groupDigits(c.OutputTokens),
		formatUSD(c.CostUSD))
}

// brainCost is the brain's share: "brain 2 calls, 400 tokens in, 20 out, $0.0010".
func brainCost(c jobs.CostLine) string {
	return fmt.Sprintf("brain %s, %s tokens in, %s out, %s", jobs.Count(c.Calls, "call"), groupDigits(c.InputTokens),
		groupDigits(c.OutputTokens), formatUSD(c.CostUSD))
}

// QuestionsMessage answers /orch questions: the open questions a person may answer, oldest first, each with its run,
// task, requester, how long it has waited and a link to its thread (links, by run id); total counts them all.
func QuestionsMessage(qs []Question, total int, links map[string]string, now time.Time) Message {
	lines := make([]string, 0, len(qs))
	for _, q := range qs {
		line := fmt.Sprintf(":raising_hand: %s · *%s*: %s\nstarted by %s · waiting %s", inlineCode(q.Run.ID, maxActionField),
			escapeCut(taskLabel(q.Run, q.Escalation.TaskID), 100, false), questionHead(q.Escalation),
			startedBy(q.Run.Origin), HumanDuration(now.Sub(q.Escalation.CreatedAt)))
		if link := links[q.Run.ID]; link != "" {
			line += " · " + slackLink(link, "answer in the thread")
		}
		lines = append(lines, line)
	}
	head := fmt.Sprintf("*Questions waiting for an answer*, oldest first (%d)", total)
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	if left := total - len(qs); left > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf("_… and %d more_", left)))
	}
	return newMessage(fmt.Sprintf("%s waiting for an answer", jobs.Count(total, "question")), blocks)
}

// questionHead is the first line of a question that says something, bounded; the trigger when there is no text.
func questionHead(e *jobs.Escalation) string {
	if q := safetext.HeadLine(e.Question); q != "" {
		return escapeCut(q, 150, false)
	}
	return "_" + escapeCut(e.Trigger.Describe(e.Name), 100, false) + "_"
}

// LogsMessage answers /orch logs: a run's last events, as its progress message shows them.
func LogsMessage(r *jobs.Run, events []jobs.Event) Message {
	lines := make([]string, 0, len(events))
	for _, e := range events {
		if l := eventLine(e); l != "" {
			lines = append(lines, eventTime(e.Time)+" "+l)
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "_No events yet._")
	}
	head := fmt.Sprintf("*Latest events of run %s* (%s), oldest first\n%s", inlineCode(r.ID, maxActionField),
		escapeCut(runTitle(r), 100, false), runStatusLine(r))
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	return newMessage(escapeCut(fmt.Sprintf("Run %s: %s", r.ID, fallbackStatus(r)), maxFallbackText, false), blocks)
}

func moreLines(n int) string { return fmt.Sprintf("_… and %d more_", n) }

// runTitle is what a run is about: its plan's title, or the first line of what was asked in words.
func runTitle(r *jobs.Run) string {
	if r.Request != "" {
		if l := safetext.HeadLine(r.Request); l != "" {
			return l
		}
	}
	return PlanTitle(r)
}

// runEmoji is a run's status at a glance, as its status line shows it.
func runEmoji(st jobs.RunStatus) string {
	switch st {
	case jobs.RunQueued:
		return ":inbox_tray:"
	case jobs.RunRunning:
		return ":hourglass_flowing_sand:"
	case jobs.RunParked:
		return ":raising_hand:"
	case jobs.RunPaused:
		return ":pause_button:"
	case jobs.RunCompleted:
		return ":white_check_mark:"
	case jobs.RunFailed:
		return ":x:"
	case jobs.RunAborted:
		return ":octagonal_sign:"
	}
	return ":grey_question:"
}

// startTime is when something started, in each reader's own time zone and words ("Today at 9:41 AM"); the text
// after "|" is what clients that cannot show it print.
func startTime(t time.Time) string {
	if t.IsZero() {
		return "·"
	}
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s UTC>", t.Unix(), t.UTC().Format("2006-01-02 15:04"))
}

// slackLink is a link in mrkdwn: the URL with &, < and > escaped as in any text and no "|" (it would end the URL),
// and its label escaped.
func slackLink(url, label string) string {
	url = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "%7C", " ", "%20").Replace(url)
	return "<" + url + "|" + escapeCut(label, 100, false) + ">"
}
