package forge

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/jobs"
)

// Bounds on the parts of a summary, so that one long text cannot crowd out the rest.
const (
	maxSummary  = 2000 // a task's summary
	maxQuestion = 600  // an escalation's question
	maxAnswer   = 1000 // a human's answer or reason
)

// Summary is the title and markdown body of run r's pull request. The title is the plan's title (or, without one,
// the single task's) after "orch: ". The body says which run and plan it is, where the branch stands (base, commits,
// diffstat), what the run cost, each task with its status, commit and the brain's summary, and every question a
// human answered: what was asked, who answered, where, and what they chose or said. The texts are the run's own,
// already redacted when they were saved; @mentions are defused so that opening the pull request notifies no one. The
// body fits GitHub's limit (MaxBody): what does not fit is cut at a line, with a note saying where the rest is.
func Summary(r *jobs.Run) (title, body string) {
	return SummaryRedacted(r, nil)
}

// SummaryRedacted is Summary with redact applied to the title and the body before they are bounded: orch's own
// secrets, known by value, are taken out of what a person wrote in an answer as of what the agent said (which was
// redacted where it entered orch already). A nil redact changes nothing.
func SummaryRedacted(r *jobs.Run, redact func(string) string) (title, body string) {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return boundTitle(redact(summaryTitle(r))), boundBody(redact(summaryBody(r)), r.ID)
}

func summaryTitle(r *jobs.Run) string {
	t := strings.TrimSpace(r.PlanTitle)
	if t == "" && len(r.Tasks) == 1 {
		t = strings.TrimSpace(r.Tasks[0].Title)
	}
	if t == "" {
		t = "run " + r.ID
	}
	return boundTitle("orch: " + t)
}

func summaryBody(r *jobs.Run) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("Run %s", gfm.Code(r.ID))
	if r.PlanPath != "" {
		w(" of plan %s", gfm.Code(r.PlanPath))
	}
	w(": **%s**", r.Status)
	if d := time.Duration(r.ElapsedMS()) * time.Millisecond; d > 0 {
		w(" in %s", d.Round(time.Second))
	}
	w(".\n\n")
	if g := r.Git; g != nil {
		w("**Branch** %s", gfm.Code(g.Branch))
		if g.Base != "" {
			w(" from %s", gfm.Code(g.Base))
		}
		if s := shortSHA(g.BaseCommit); s != "" {
			w(" at %s", s)
		}
		w(" · %s · %s\n\n", jobs.Count(g.Commits, "commit"), jobs.WorkOf(r).Diffstat())
	}
	usd, in, out := r.Cost()
	attempts := 0
	for _, t := range r.Tasks {
		attempts += len(t.Attempts)
	}
	w("**Cost** $%.4f · %d tokens in, %d out (agent and brain, %s)\n", usd, in, out, jobs.Count(attempts, "attempt"))
	writeTasks(&b, r)
	writeDecisions(&b, r)
	w("\n---\n_Opened by orch for run %s. The whole record: %s and %s._\n",
		gfm.Code(r.ID), gfm.Code("orch status "+r.ID), gfm.Code("orch escalation log "+r.ID))
	// The trailers: which run (the same line as its commits'), and the issue it was asked in, which GitHub closes
	// when the pull request is merged.
	w("\nOrch-Run: %s\n", r.ID)
	if r.Origin.Kind == "github" && r.Origin.Issue > 0 {
		w("Closes #%d\n", r.Origin.Issue)
	}
	return b.String()
}

// writeTasks lists the run's tasks with their status, commit and summary.
func writeTasks(b *strings.Builder, r *jobs.Run) {
	b.WriteString("\n### Tasks\n\n")
	if len(r.Tasks) == 0 {
		b.WriteString("_None._\n")
	}
	for _, t := range r.Tasks {
		fmt.Fprintf(b, "- **%s** %s — %s", gfm.Inline(t.ID, 100), gfm.Inline(t.Title, 200), taskStatus(t.Status))
		if s := shortSHA(t.Commit); s != "" {
			fmt.Fprintf(b, " · %s", s)
		}
		b.WriteString("\n")
		if s := strings.TrimSpace(t.Summary); s != "" {
			fmt.Fprintf(b, "%s\n", gfm.Indent(gfm.Text(s, maxSummary), "  "))
		}
	}
}

// writeDecisions lists the questions people answered, then those settled without a person.
func writeDecisions(b *strings.Builder, r *jobs.Run) {
	var humans, automatic []*jobs.Escalation
	for _, e := range r.Escalations {
		switch {
		case e.Resolution == nil:
		case isAutomatic(e.Resolution):
			automatic = append(automatic, e)
		default:
			humans = append(humans, e)
		}
	}
	b.WriteString("\n### Decisions taken by humans\n\n")
	switch {
	case len(humans) == 0 && len(automatic) == 0:
		b.WriteString("_None: the run needed no human._\n")
	case len(humans) == 0:
		b.WriteString("_None._\n")
	}
	for _, e := range humans {
		writeDecision(b, r, e)
	}
	if len(automatic) > 0 {
		b.WriteString("\n### Questions settled without a human\n\n")
		for _, e := range automatic {
			writeDecision(b, r, e)
		}
	}
}

// writeDecision is one answered question: the task and why it was asked, the question, and who answered what, where
// and when. A blank line ends each quote, which would otherwise take in the next line.
func writeDecision(b *strings.Builder, r *jobs.Run, e *jobs.Escalation) {
	res := e.Resolution
	task := gfm.Inline(e.TaskID, 100)
	if t := r.Task(e.TaskID); t != nil && t.Title != "" {
		task += " (" + gfm.Inline(t.Title, 200) + ")"
	}
	fmt.Fprintf(b, "- **%s** · %s", task, gfm.Inline(e.Trigger.Describe(e.Name), 100))
	if e.Attempt > 0 {
		fmt.Fprintf(b, " · attempt %d", e.Attempt)
	}
	b.WriteString("\n")
	if q := strings.TrimSpace(e.Question); q != "" {
		fmt.Fprintf(b, "%s\n\n", gfm.Indent(gfm.Text(q, maxQuestion), "  > "))
	}
	who := gfm.Inline(res.By, 100)
	if who == "" {
		who = "someone"
	}
	line := strings.Join(strings.Fields(who+" "+answered(e, res)+" "+via(res.Via)), " ")
	if !res.At.IsZero() {
		line += " (" + res.At.UTC().Format("2006-01-02 15:04 UTC") + ")"
	}
	said := strings.TrimSpace(res.Text)
	if said != "" && res.Type == jobs.ResolveAnswer {
		fmt.Fprintf(b, "  %s:\n%s\n\n", line, gfm.Indent(gfm.Text(said, maxAnswer), "  > "))
	} else {
		fmt.Fprintf(b, "  %s\n", line)
	}
	if s := strings.TrimSpace(res.Reason); s != "" {
		fmt.Fprintf(b, "  Reason: %s\n", gfm.Inline(s, maxAnswer))
	}
}

// answered says what a resolution did, in the words every surface uses (escalation.Verb); what the person said with
// it is quoted after it.
func answered(e *jobs.Escalation, res *jobs.Resolution) string {
	return gfm.Inline(escalation.Verb(e, res), 300)
}

// isAutomatic reports whether orch settled the question itself (a timeout, auto-approval) rather than a person.
func isAutomatic(res *jobs.Resolution) bool {
	return res.Via == "timeout" || res.Via == "auto-approve"
}

// via says where an answer came from, in the words every surface uses (jobs.ViaText).
func via(v string) string { return gfm.Inline(jobs.ViaText(v), 60) }

// taskStatus is a task's status for people.
func taskStatus(s jobs.TaskStatus) string {
	if s == jobs.TaskForced {
		return "forced (marked done by a human despite its error)"
	}
	return string(s)
}

var hexSHA = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// shortSHA is a commit's abbreviation, written bare so that GitHub links it; "" for anything that is not a commit id.
func shortSHA(sha string) string {
	if !hexSHA.MatchString(sha) {
		return ""
	}
	return sha[:7]
}

// boundTitle is a title on one line within MaxTitle.
func boundTitle(t string) string {
	return gfm.Cut(strings.Join(strings.Fields(t), " "), MaxTitle)
}

// boundBody is body within MaxBody bytes (so within GitHub's limit however it counts characters): cut at the last
// line that fits, with a note saying where the rest is (runID's record, when it is known).
func boundBody(body, runID string) string {
	note := "\n\n---\n_The rest is cut: GitHub takes at most 65536 characters here._\n"
	if runID != "" {
		note = fmt.Sprintf("\n\n---\n_The rest is cut: GitHub takes at most 65536 characters here. The whole record: %s and %s._\n",
			gfm.Code("orch status "+runID), gfm.Code("orch escalation log "+runID))
	}
	return gfm.Bound(body, note)
}
