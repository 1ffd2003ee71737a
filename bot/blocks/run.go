package blocks

import (
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// RootMessage is the run's message in the channel: plan title and path, run id, who started it, the task list with
// each task's status, and the run's status. It is updated in place as the run moves, and at the end. askedIn links to
// the conversation the run was asked in, or to the thread of the run it follows up ("" for none).
func RootMessage(r *jobs.Run, askedIn string) Message {
	title := PlanTitle(r)
	blocks := []slack.Block{headerBlock(cutPlain(title, maxHeaderText))}
	if r.Request != "" {
		// A request in words is quoted as asked, with who asked; a follow-up names the run it follows.
		run := fmt.Sprintf("*Run:* %s · asked by %s", inlineCode(r.ID, maxActionField), startedBy(r.Origin))
		if r.FollowUpOf != "" {
			run += " · follows up " + inlineCode(r.FollowUpOf, maxActionField)
		}
		blocks = append(blocks, sectionBlock(quoteText(r.Request, maxRequestQuote)), sectionBlock(run))
	} else {
		blocks = append(blocks, sectionBlock(fmt.Sprintf("*Plan:* %s\n*Run:* %s · started by %s",
			inlineCode(r.PlanPath, maxLine), inlineCode(r.ID, maxActionField), startedBy(r.Origin))))
	}
	blocks = append(blocks, sectionBlock(runStatusLine(r)))
	if n := len(r.FollowUps); n > 0 {
		ids := make([]string, 0, min(n, 5))
		for _, id := range r.FollowUps[max(0, n-5):] {
			ids = append(ids, inlineCode(id, maxActionField))
		}
		blocks = append(blocks, contextBlock("Followed up by "+strings.Join(ids, ", ")))
	}
	lines := make([]string, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		lines = append(lines, taskLine(t))
	}
	blocks = append(blocks, packLines(lines, maxTaskSections, func(n int) string {
		return fmt.Sprintf("_… and %s_", jobs.Count(n, "more task"))
	})...)
	blocks = append(blocks, contextBlock(costLine(r, "Cost")))
	if askedIn != "" {
		what := "Asked in " + slackLink(askedIn, "a conversation")
		if r.FollowUpOf != "" {
			what = "Follows up run " + inlineCode(r.FollowUpOf, maxActionField) + ": " + slackLink(askedIn, "its thread")
		}
		blocks = append(blocks, contextBlock(what))
	}
	text := fmt.Sprintf("Run %s: %s: %s", r.ID, title, fallbackStatus(r))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// PointerMessage leads from where run r was asked for in a thread (a conversation, or the thread of the run it follows
// up) to the run's own thread, at link ("" when the bot does not know its workspace's address).
func PointerMessage(r *jobs.Run, link string) Message {
	where := "its thread is in this channel"
	if link != "" {
		where = slackLink(link, "follow it in its thread")
	}
	text := fmt.Sprintf("On it: run %s, %s.", inlineCode(r.ID, maxActionField), where)
	if r.FollowUpOf != "" {
		text = fmt.Sprintf("Follow-up started: run %s, on this run's branch; %s.", inlineCode(r.ID, maxActionField), where)
	}
	return newMessage(escapeCut(fmt.Sprintf("On it: run %s", r.ID), maxFallbackText, false), []slack.Block{sectionBlock(text)})
}

// NotStartedMessage says, where someone asked for a run in a channel (a mention of the bot), that it did not start and
// why: text is a sentence of plain words, the reason included, and user (a Slack user id) who asked.
func NotStartedMessage(user, text string) Message {
	who := "someone"
	if IsUserID(user) {
		who = "<@" + user + ">"
	}
	body := fmt.Sprintf(":warning: %s: %s", who, escapeCut(text, maxSectionText-200, true))
	return newMessage(escapeCut(safetext.HeadLine(text), maxFallbackText, false), []slack.Block{sectionBlock(body)})
}

// StoppedMessage tells whoever started run r that it was stopped, and why: orch cannot post in its channel.
func StoppedMessage(r *jobs.Run, reason string) Message {
	text := fmt.Sprintf("Run %s (%s) was stopped: %s.", inlineCode(r.ID, maxActionField), escapeCut(PlanTitle(r), maxLine, false),
		escapeCut(reason, maxLine*2, false))
	return newMessage(escapeCut("Run "+r.ID+" was stopped: "+reason, maxFallbackText, false), []slack.Block{sectionBlock(text)})
}

// ProgressMessage is the progress view in the run's thread, updated in place: the last few events as short lines,
// which the root message does not show. What the run is doing now (its task and attempt), its tasks and its cost are
// the root message's, kept up to date beside it: the thread does not say them a second time.
func ProgressMessage(r *jobs.Run, recent []jobs.Event) Message {
	fallback := fmt.Sprintf("Run %s: %s", r.ID, r.Status)
	if t := r.Current(); t != nil {
		fallback = fmt.Sprintf("Run %s: %s (%s)", r.ID, taskLabel(r, t.ID), t.Status)
	}
	lines := make([]string, 0, len(recent))
	for _, e := range recent {
		if l := eventLine(e); l != "" {
			lines = append(lines, eventTime(e.Time)+" "+l)
		}
	}
	if skipped := len(lines) - maxProgressEvents; skipped > 0 {
		lines = lines[skipped:]
	}
	if len(lines) == 0 {
		lines = append(lines, "_No events yet._")
	}
	return newMessage(escapeCut(fallback, maxFallbackText, false), []slack.Block{sectionBlock(strings.Join(lines, "\n"))})
}

// FinalMessage is the thread message when the run ends: the run id, `completed`, `failed` or `aborted`, how long it
// took, what it cost, and why it did not complete.
func FinalMessage(r *jobs.Run) Message {
	d := HumanDuration(runElapsed(r))
	usd, _, _ := r.Cost()
	id, cost, word := inlineCode(r.ID, maxActionField), formatUSD(usd), string(r.Status)
	var head string
	switch r.Status {
	case jobs.RunCompleted:
		head = fmt.Sprintf(":white_check_mark: Run %s *completed* in %s · cost %s", id, d, cost)
	case jobs.RunFailed:
		head = fmt.Sprintf(":x: Run %s *failed* after %s · cost %s", id, d, cost)
	case jobs.RunAborted:
		head = fmt.Sprintf(":octagonal_sign: Run %s *aborted* after %s · cost %s", id, d, cost)
	default:
		head = fmt.Sprintf("Run %s is *%s* after %s · cost %s", id, escapeCut(word, maxLine, false), d, cost)
	}
	blocks := []slack.Block{sectionBlock(head)}
	text := fmt.Sprintf("Run %s %s after %s, cost %s", r.ID, word, d, cost)
	if r.Status == jobs.RunCompleted {
		text = fmt.Sprintf("Run %s %s in %s, cost %s", r.ID, word, d, cost)
	}
	if r.Status != jobs.RunCompleted && strings.TrimSpace(r.Reason) != "" {
		blocks = append(blocks, sectionBlock("*Reason:* "+escapeCut(r.Reason, maxSectionText-len("*Reason:* "), true)))
		text += ": " + safetext.HeadLine(r.Reason)
	}
	if line := workLine(r); line != "" {
		blocks = append(blocks, sectionBlock(line))
		if g := r.Git; g.Commits > 0 {
			text += fmt.Sprintf("; branch %s, %s", g.Branch, jobs.Count(g.Commits, "commit"))
		}
	}
	title := PlanTitle(r)
	blocks = append(blocks, contextBlock(fmt.Sprintf("%s · %s · %s", escapeCut(title, maxLine, false),
		r.Tally().String(), tokensText(r))))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// workLine says what the run left on its branch, with its pull request: "" for a run without a branch.
func workLine(r *jobs.Run) string {
	g := r.Git
	if g == nil {
		return ""
	}
	branch := inlineCode(g.Branch, maxLine)
	var line string
	if g.Commits == 0 {
		line = fmt.Sprintf(":twisted_rightwards_arrows: Branch %s: no changes from %s", branch, inlineCode(g.Base, maxLine))
	} else {
		line = fmt.Sprintf(":twisted_rightwards_arrows: Branch %s: %s on %s · %s", branch, jobs.Count(g.Commits, "commit"),
			inlineCode(g.Base, maxLine), diffstatText(g))
	}
	if g.Unfinished != "" {
		line += " · work left uncommitted at " + inlineCode(g.Unfinished, maxLine)
	}
	if g.Pushed != "" {
		line += " · pushed to " + inlineCode(g.Push, maxLine)
	}
	if u := g.PullRequest; strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		// Slack's link syntax: the URL with &, < and > escaped as in any text, and no | (it ends the URL).
		u = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "%7C", " ", "%20").Replace(u)
		line += fmt.Sprintf("\n:mag: <%s|Draft pull request>", u)
	}
	if g.Unfinished != "" {
		line += "\nWork left uncommitted is kept at " + inlineCode(g.Unfinished, maxLine)
	}
	return line
}

// diffstatText is git's diffstat in words: "3 files changed, +10 −2".
func diffstatText(g *jobs.Git) string {
	return fmt.Sprintf("%s changed, +%d −%d", jobs.Count(g.FilesChanged, "file"), g.Insertions, g.Deletions)
}

// PausedMessage says the run stopped because the brain was unavailable, why, and how to continue it.
func PausedMessage(r *jobs.Run) Message {
	reason := strings.TrimSpace(r.Reason)
	if reason == "" {
		reason = "the brain was unavailable"
	}
	resume := "orch resume " + r.ID
	head := fmt.Sprintf(":pause_button: Run %s is *paused*: %s", inlineCode(r.ID, maxActionField),
		escapeCut(reason, 2000, true))
	blocks := []slack.Block{
		// The command as plain words, the way the terminal prints it, so it reads (and copies) the same everywhere.
		sectionBlock(head + "\nresume with: " + escapeCut(resume, maxLine, false)),
		contextBlock("Nothing runs while it is paused; the agent's last output is kept and judged when the run resumes."),
	}
	text := fmt.Sprintf("Run %s paused: %s. resume with: %s", r.ID, safetext.HeadLine(reason), resume)
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}
