package escalation

import (
	"fmt"
	"strings"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// An attempt whose outcome the brain could not tell is put to a person as a question about the attempt: what the agent
// said (its last words, bounded), and two options that say what each does — accept the work as completed, or run the
// task again — besides words (guidance for the next attempt) and an abort. No answer runs the task again unless the
// person asks for it: an agent that did something with effects beyond its worktree (a push, a deploy) and then said
// so in words the brain could not read must not do it again because someone answered "looks fine".

// The unclear question's option keys.
const (
	UnclearAccept = "A"
	UnclearRetry  = "B"
)

// UnclearOptions are the unclear question's options.
var UnclearOptions = []jobs.Option{
	{Key: UnclearAccept, Label: "Accept as completed: take the work as it is and go on"},
	{Key: UnclearRetry, Label: "Run the task again (words you add guide the agent)"},
}

// maxLastWords bounds the agent's words an unclear question quotes: enough to judge by, short enough to read on a
// phone; the whole output is in the question's context.
const maxLastWords = 1200

// UnclearSpec is the question about task taskID's attempt when the brain could not tell its outcome from output;
// effects are the calls with effects beyond the worktree that the attempt ran with a person's leave, which running
// the task again may run again.
func UnclearSpec(taskID, output string, effects []string) Spec {
	words := lastWords(output, maxLastWords)
	q := fmt.Sprintf("orch cannot tell whether task %s is done: the agent's answer says neither that it finished, that "+
		"it failed, nor what it needs. It ended with:\n\n%s\n\nAccept its work as completed, have it run the task again "+
		"(an answer in your own words goes to it as guidance), or abort the run.", taskID, quote(words))
	if len(effects) > 0 {
		q += "\n\nRunning the task again may run again what a person let through, with effects beyond its worktree:\n" +
			Bullets(effects)
	}
	s := Spec{Trigger: jobs.TriggerNeedsHelp, Source: "brain", Question: q, Output: output, Unclear: true,
		Keyed: UnclearOptions}
	return s
}

// Accepts reports whether answer res to escalation e accepts the attempt it asked about, instead of running the task
// again: any answer but a retry to a question that held completed work, and the accepting answers (the accept option,
// or resume: "go on as it is") to an unclear one. A force is the task marked done whatever its attempt was.
func Accepts(e *jobs.Escalation, res *jobs.Resolution) bool {
	switch {
	case e.Unclear:
		return res.Type == jobs.ResolveResume || res.Type == jobs.ResolveChoose && res.Key == UnclearAccept
	case e.Held:
		return res.Type != jobs.ResolveRetry
	}
	return false
}

// Bullets lists lines as a markdown list, bounded.
func Bullets(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i == maxBullets {
			fmt.Fprintf(&b, "- … and %d more\n", len(lines)-maxBullets)
			break
		}
		b.WriteString("- " + safetext.OneLine(l, 300) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// maxBullets bounds a list in a question.
const maxBullets = 10

// lastWords is the end of output, at most n bytes, cut at a line where it can be.
func lastWords(output string, n int) string {
	s := strings.TrimSpace(safetext.Redact(output))
	if len(s) <= n {
		return s
	}
	cut := s[len(s)-n:]
	if i := strings.IndexByte(cut, '\n'); i >= 0 && i < n/2 {
		cut = cut[i+1:]
	}
	return "…" + strings.ToValidUTF8(cut, "")
}

// quote marks text as the agent's own words, line by line.
func quote(text string) string {
	if text == "" {
		return "> (nothing)"
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}
