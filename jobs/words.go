package jobs

import (
	"fmt"
	"strings"
	"time"
)

// The words every surface uses about a run: how many of what, how long, which agent. A count or a name written
// here reads the same on a terminal, in Slack, in the web view and in a log.

// Count is n and its noun, in the plural unless n is 1: "1 task", "3 stages".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, plural(noun))
}

func plural(noun string) string {
	switch {
	case strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ay") && !strings.HasSuffix(noun, "ey"):
		return noun[:len(noun)-1] + "ies" // reply, retry
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"):
		return noun + "es"
	}
	return noun + "s"
}

// Unit is what a run's plan is made of: "stage" for a DOT pipeline, "task" for a plan of milestones.
func (r *Run) Unit() string {
	if r.Graph != "" {
		return "stage"
	}
	return "task"
}

// Tally is how far a run got: Done of its Total tasks (or stages) are done.
type Tally struct {
	Done, Total int
	Unit        string // "task" or "stage"
}

// Tally counts r's tasks and those done (completed or forced).
func (r *Run) Tally() Tally {
	t := Tally{Total: len(r.Tasks), Unit: r.Unit()}
	for _, task := range r.Tasks {
		if task.Status.Done() {
			t.Done++
		}
	}
	return t
}

// String is "3 of 4 stages done".
func (t Tally) String() string {
	return fmt.Sprintf("%d of %s done", t.Done, Count(t.Total, t.unit()))
}

// Size is "4 stages".
func (t Tally) Size() string { return Count(t.Total, t.unit()) }

func (t Tally) unit() string {
	if t.Unit == "" {
		return "task"
	}
	return t.Unit
}

// AttemptText is "attempt 2/3" ("attempt 4/3" for a retry a person asked for past the cap), "attempt 2" where there
// is no cap, or "" before the first.
func AttemptText(n, of int) string {
	switch {
	case n <= 0:
		return ""
	case of > 0:
		return fmt.Sprintf("attempt %d/%d", n, of)
	}
	return fmt.Sprintf("attempt %d", n)
}

// AgentName is an agent as people call it: "Claude Code", "the simulated agent".
func AgentName(a string) string {
	switch {
	case a == "claude":
		return "Claude Code"
	case a == "sim":
		return "the simulated agent"
	case strings.HasPrefix(a, "cmd:"):
		return "the agent command"
	case a == "":
		return "the agent"
	}
	return a
}

// Millis is a duration in milliseconds as people read it, to a tenth of a second: "1.2s", "3m4.5s".
func Millis(v int64) string {
	return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// Seconds is a wait in seconds as people read it, to the second: "45s", "2m5s".
func Seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// Diffstat is git's summary line of a change: "3 files changed, 10 insertions(+), 2 deletions(-)".
func (w Work) Diffstat() string {
	s := Count(w.FilesChanged, "file") + " changed"
	if w.Insertions > 0 {
		s += ", " + Count(w.Insertions, "insertion") + "(+)"
	}
	if w.Deletions > 0 {
		s += ", " + Count(w.Deletions, "deletion") + "(-)"
	}
	return s
}

// Lines say what a run left on its branch, and where the work it left uncommitted is kept: none for a run without a
// branch.
func (w Work) Lines(runID string) []string {
	var lines []string
	switch {
	case w.Branch == "":
		return nil
	case w.Commits == 0:
		lines = []string{fmt.Sprintf("Branch %s: no changes from %s", w.Branch, w.Base)}
	default:
		lines = []string{fmt.Sprintf("Branch %s: %s on %s, %s", w.Branch, Count(w.Commits, "commit"), w.Base, w.Diffstat()),
			"Review it: orch diff " + runID}
	}
	if w.Unfinished != "" {
		lines = append(lines, "Work left uncommitted is kept at "+w.Unfinished+": git show "+w.Unfinished)
	}
	return lines
}

// ViaText says where an answer or a request came from, after a name: "ann in Slack", "bob at the terminal".
func ViaText(via string) string {
	switch via {
	case "slack":
		return "in Slack"
	case "console", "cli":
		return "at the terminal"
	case "web":
		return "in the web view"
	case "github":
		return "on GitHub"
	case "answers-file":
		return "from an answers file"
	case "auto-approve":
		return "by auto-approval"
	case "timeout":
		return "on timeout"
	case "":
		return ""
	}
	return "via " + via
}
