package hub

import (
	"fmt"
	"strings"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// The comments orch writes on GitHub: one status comment per run, edited in place as the run goes, and a comment per
// question, edited when it is answered. They are pure — a run in, Markdown out — and every text that comes from the
// run (the agent's words, a plan's title, a person's answer) goes through gfm: it notifies no one, closes no fence and
// stays bounded.

// The bounds of the texts a comment shows, in characters: the whole run is one click away.
const (
	maxLine     = 300
	maxQuestion = 4000
	maxOutput   = 6000
	maxAnswer   = 2000
)

// StatusComment is a run's status comment: where the run is, its tasks, the latest thing it did, and at its end
// what it left (branch, pull request) and what it cost. latest is the line of the run's last event people see (""
// for none yet); link is the run's page in the web view ("" when orch has no public address).
func StatusComment(r *jobs.Run, latest, link string) string {
	var b strings.Builder
	b.WriteString(statusHead(r))
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "orch run %s · %s · %s\n", gfm.Code(r.ID), gfm.Inline(safetext.Redact(planTitle(r)), maxLine), r.Tally())
	if !r.Status.Terminal() && latest != "" {
		fmt.Fprintf(&b, "\n**Latest:** %s\n", gfm.Inline(safetext.Redact(latest), maxLine))
	}
	if w := workText(r); w != "" {
		b.WriteString("\n" + w + "\n")
	}
	if usd, in, out := r.Cost(); usd > 0 || in+out > 0 {
		fmt.Fprintf(&b, "\nCost: $%.4f · %s\n", usd, jobs.Count(int(in+out), "token"))
	}
	if link != "" {
		fmt.Fprintf(&b, "\n[Follow the run](%s)\n", link)
	}
	return gfm.Bound(b.String(), "\n_(cut)_\n")
}

// statusHead is the status comment's first line.
func statusHead(r *jobs.Run) string {
	took := jobs.Millis(r.ElapsedMS())
	reason := ""
	if s := strings.TrimSpace(r.Reason); s != "" {
		reason = ": " + gfm.Inline(safetext.Redact(s), maxLine)
	}
	switch r.Status {
	case jobs.RunQueued:
		return "⏳ **Queued**: a worker picks it up next."
	case jobs.RunRunning:
		return "🔧 **Working**"
	case jobs.RunParked:
		if r.OpenEscalation() == nil {
			return "▶️ **Answered**: the run goes on."
		}
		return "✋ **Waiting for an answer**: the question is below."
	case jobs.RunPaused:
		return "⏸️ **Paused**" + reason
	case jobs.RunCompleted:
		return "✅ **Completed** in " + took
	case jobs.RunFailed:
		return "❌ **Failed** after " + took + reason
	case jobs.RunAborted:
		return "🛑 **Aborted** after " + took + reason
	}
	return "**" + gfm.Inline(string(r.Status), 40) + "**"
}

// workText says what the run left on its branch, and its pull request: "" for a run without a branch.
func workText(r *jobs.Run) string {
	g := r.Git
	if g == nil || g.Branch == "" {
		return ""
	}
	w := jobs.WorkOf(r)
	var s string
	if w.Commits == 0 {
		s = fmt.Sprintf("Branch %s: no changes from %s", gfm.Code(g.Branch), gfm.Code(w.Base))
	} else {
		s = fmt.Sprintf("Branch %s: %s on %s, %s", gfm.Code(g.Branch), jobs.Count(w.Commits, "commit"),
			gfm.Code(w.Base), w.Diffstat())
	}
	if w.Unfinished != "" {
		s += "; work left uncommitted at " + gfm.Code(w.Unfinished)
	}
	if g.Pushed != "" {
		s += ", pushed to " + gfm.Code(g.Push)
	}
	if u := g.PullRequest; strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		s += "\n\nDraft pull request: " + u
	}
	return s
}

func planTitle(r *jobs.Run) string {
	if t := strings.TrimSpace(r.PlanTitle); t != "" {
		return t
	}
	return r.PlanPath
}

// QuestionComment is the comment that asks escalation e of run r, and says how to answer it with mention.
func QuestionComment(r *jobs.Run, e *jobs.Escalation, mention string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### ✋ orch needs an answer: %s\n\n", taskLabel(r, e))
	writeQuestion(&b, r, e)
	fmt.Fprintf(&b, "\n%s\n", howToAnswer(e, mention))
	return gfm.Bound(b.String(), "\n_(cut: the whole question is in the run's record)_\n")
}

// AnsweredComment is the question's comment once it is answered: who answered, from where, after how long and
// what, with the question folded under it.
func AnsweredComment(r *jobs.Run, e *jobs.Escalation) string {
	res := e.Resolution
	if res == nil {
		return QuestionComment(r, e, "")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### ✅ Answered: %s\n\n", taskLabel(r, e))
	who := gfm.Inline(res.By, 100)
	if w := jobs.ViaText(res.Via); w != "" {
		who += " " + gfm.Inline(w, 100)
	}
	fmt.Fprintf(&b, "**%s** after %s: %s\n", who, jobs.Seconds(res.At.Sub(e.CreatedAt).Seconds()),
		gfm.Text(safetext.Redact(escalation.Describe(e, res)), maxAnswer))
	b.WriteString("\n<details><summary>The question</summary>\n\n")
	writeQuestion(&b, r, e)
	b.WriteString("\n</details>\n")
	return gfm.Bound(b.String(), "\n</details>\n\n_(cut: the whole question is in the run's record)_\n")
}

// taskLabel names the question's task: "Task 1.2: Add the cache (the agent asked)".
func taskLabel(r *jobs.Run, e *jobs.Escalation) string {
	title := ""
	if t := r.Task(e.TaskID); t != nil {
		title = t.Title
	}
	s := "Task " + e.TaskID
	if title != "" {
		s += ": " + title
	}
	return gfm.Inline(s, maxLine) + " (" + gfm.Inline(e.Trigger.Describe(e.Name), 100) + ")"
}

// writeQuestion writes the question, its options with the recommendation, and the agent's own words folded.
func writeQuestion(b *strings.Builder, r *jobs.Run, e *jobs.Escalation) {
	q := gfm.Text(safetext.Redact(e.Question), maxQuestion)
	b.WriteString(gfm.Indent(q, "> ") + "\n")
	if len(e.Options) > 0 {
		b.WriteString("\n**Options**\n\n")
		for _, o := range e.Options {
			line := fmt.Sprintf("- **%s)** %s", gfm.Inline(o.Key, 20), gfm.Inline(o.Label, maxLine))
			if strings.EqualFold(o.Key, e.Recommendation) {
				line += " _(recommended)_"
			}
			b.WriteString(line + "\n")
		}
	}
	if rec := strings.TrimSpace(e.Recommendation); rec != "" {
		if _, ok := e.OptionByKey(rec); !ok {
			fmt.Fprintf(b, "\n**Recommendation:** %s\n", gfm.Inline(safetext.Redact(rec), maxLine))
		}
	}
	if out := strings.TrimSpace(e.Output); out != "" {
		// A code block: nothing the agent wrote is markup here, and a mention in it notifies no one.
		fmt.Fprintf(b, "\n<details><summary>What the agent said</summary>\n\n%s\n\n</details>\n",
			gfm.Block(gfm.Cut(safetext.Redact(out), maxOutput)))
	}
	if t := r.Task(e.TaskID); t != nil && e.Attempt > 0 {
		fmt.Fprintf(b, "\n_%s_\n", jobs.AttemptText(e.Attempt, r.MaxAttempts(t)))
	}
}

// howToAnswer says which comments answer e.
func howToAnswer(e *jobs.Escalation, mention string) string {
	m := func(words string) string { return gfm.Code(mention + " " + words) }
	var ways string
	switch {
	case e.Trigger == jobs.TriggerApproval:
		ways = fmt.Sprintf("%s, %s, %s", m("allow"), m("allow for run"), m("deny <reason>"))
	case e.Trigger == jobs.TriggerChat:
		ways = fmt.Sprintf("%s to reply to the agent, %s to end the conversation", m("<your reply>"), m("/done"))
	case e.Trigger == jobs.TriggerGate:
		ways = fmt.Sprintf("%s to choose", m(firstKey(e)))
	case len(e.Options) > 0:
		ways = fmt.Sprintf("%s to choose an option, %s, %s", m(firstKey(e)), m("<your guidance>"), m("retry"))
	default:
		ways = fmt.Sprintf("%s, %s", m("<your guidance>"), m("retry"))
	}
	return fmt.Sprintf("Answer with a comment: %s, or %s. The first answer from anywhere (here, the web view, Slack, "+
		"the terminal) is the one taken.", ways, m("abort <reason>"))
}

func firstKey(e *jobs.Escalation) string {
	if _, ok := e.OptionByKey(e.Recommendation); ok {
		return e.Recommendation
	}
	if len(e.Options) > 0 {
		return e.Options[0].Key
	}
	return "A"
}

// ThreadReply is orch's answer in a review thread that task t of run r took up, once the run has ended: the commit
// that addresses it (GitHub links a full commit name), the agent's answer when the task changed nothing (a question to
// the author), or why the thread was not addressed.
func ThreadReply(r *jobs.Run, t *jobs.Task) string {
	said := gfm.Text(safetext.Redact(strings.TrimSpace(t.Summary)), maxAnswer)
	var b strings.Builder
	switch {
	case t.Status.Done() && t.Commit != "" && pushed(r):
		fmt.Fprintf(&b, "Addressed in %s.", t.Commit)
		if said != "" {
			b.WriteString("\n\n" + said)
		}
	case t.Status.Done() && t.Commit != "":
		fmt.Fprintf(&b, "Not pushed: the change was committed (%s), but the branch moved on GitHub while the run "+
			"worked, and orch does not push over someone else's commits.", gfm.Code(t.Commit[:min(12, len(t.Commit))]))
		if said != "" {
			b.WriteString("\n\n" + said)
		}
	case t.Status.Done() && said != "":
		b.WriteString(said)
	case t.Status.Done():
		b.WriteString("orch looked at this and changed nothing.")
	default:
		fmt.Fprintf(&b, "Not addressed: the run ended (%s) before this task was done", r.Status)
		if s := strings.TrimSpace(r.Reason); s != "" {
			fmt.Fprintf(&b, " (%s)", gfm.Inline(safetext.Redact(s), maxLine))
		}
		b.WriteString(".")
	}
	fmt.Fprintf(&b, "\n\n<sub>orch run %s, task %s</sub>\n", gfm.Code(r.ID), gfm.Inline(t.ID, 20))
	return gfm.Bound(b.String(), "\n_(cut)_\n")
}

// pushed reports whether everything run r committed is on its remote.
func pushed(r *jobs.Run) bool {
	return r.Git != nil && r.Git.Head != "" && r.Git.Pushed == r.Git.Head
}

// ChecksQuestion is what orch says in a pull request instead of another fix run: the checks named failed the same
// way same times in a row, or fixes fix runs were made already. It says how to go on.
func ChecksQuestion(names []string, same, fixes int, mention string) string {
	checks := make([]string, len(names))
	for i, n := range names {
		checks[i] = gfm.Code(n)
	}
	var b strings.Builder
	if same >= sameFailures {
		fmt.Fprintf(&b, "### ✋ orch stops fixing the checks: %s failed the same way %d times\n\n", strings.Join(checks, ", "), same)
		b.WriteString("Another attempt on its own would most likely fail the same way. ")
	} else {
		fmt.Fprintf(&b, "### ✋ orch stops fixing the checks: %s still failing after %s\n\n", strings.Join(checks, ", "),
			jobs.Count(fixes, "fix run"))
		b.WriteString("That is as many fix runs as orch makes on a pull request on its own. ")
	}
	fmt.Fprintf(&b, "What should change? %s makes another attempt with your words; or push a fix to the branch yourself.\n",
		gfm.Code(mention+" <guidance>"))
	return b.String()
}
