package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/lazyre"
)

// Task is one task of a milestone, or one node of a pipeline that does work.
type Task struct {
	ID          string // "4.1"; a pipeline node's id
	Title       string // "Create Escalation Handler"; a node's label
	Description string // the task's body, trimmed (markdown as written; fenced blocks kept); a node's prompt
	Line        int    // 1-based line of the heading or the node

	// What a pipeline node sets (zero for a milestone task).
	Kind        string        // jobs.KindAgent, KindGate or KindChat
	Timeout     time.Duration // the node's timeout: of one agent invocation, or of a gate's question
	MaxAttempts int           // max_retries + 1 when the node or graph sets it; 0: the run's attempt cap
	Backoff     string        // the node's backoff_policy
}

// ErrNoTasks says a markdown plan has no task headings: usually the wrong file,
// or tasks written in a form the splitter does not recognise.
var ErrNoTasks = errors.New("no tasks found (expected headings like \"## Task 1.1: Title\")")

// Tasks splits a markdown milestone into tasks. No task is a *PlanError
// wrapping ErrNoTasks; duplicate task ids are a *PlanError naming both lines.
func (p *Plan) Tasks() ([]Task, error) {
	if p.Kind != KindMarkdown {
		return nil, &PlanError{path: p.Path, err: fmt.Errorf("a %s plan has no markdown tasks", p.Kind)}
	}
	tasks, err := ParseMilestone(p.Content)
	if err != nil {
		return nil, &PlanError{path: p.Path, err: err}
	}
	return tasks, nil
}

// taskHeading matches "Task <id>: <title>" with the separators and emphasis
// people actually type: "**Task 1.1:** Foo", "Task 1.1 — Foo", "Task 1.1 - Foo".
// A hyphen needs a blank after it because ids may contain hyphens.
var taskHeading = lazyre.New(`(?i)^([*_]{0,3})task[ \t]+([a-z0-9](?:[a-z0-9.\-]*[a-z0-9])?)[*_]{0,3}[ \t]*(?::|—|–|-(?:[ \t]|$)|$)[*_]{0,3}[ \t]*(.*)$`)

// parseTaskHeading requires a digit in the id so that prose headings such as
// "Task Breakdown: Phase 1" are not mistaken for tasks.
func parseTaskHeading(heading string) (id, title string, ok bool) {
	m := taskHeading.FindStringSubmatch(heading)
	if m == nil || !strings.ContainsAny(m[2], "0123456789") {
		return "", "", false
	}
	title = unwrapEmphasis(m[3])
	if lead := m[1]; lead != "" {
		// The emphasis opened before "Task" closes after the title.
		title = strings.TrimSpace(strings.TrimSuffix(title, reverse(lead)))
	}
	return m[2], title, true
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// asideTitles name sections that show or check tasks rather than assign them:
// a "## Task 1.1" inside an example plan or a verification script is not work.
var asideTitles = []string{
	"example", "examples",
	"e2e test scenario", "e2e test", "e2e tests",
	"milestone verification", "verification",
	"test steps",
}

func isAside(heading string) bool {
	t := strings.ToLower(unwrapEmphasis(heading))
	for _, a := range asideTitles {
		if strings.HasPrefix(t, a) && (len(t) == len(a) || !isWordByte(t[len(a)])) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ParseMilestone splits raw milestone content into tasks. A task runs from its
// heading to the next task heading, to the next non-task heading of the same or
// a higher level, or to the end. Headings in fenced code, HTML comments and
// example or verification sections are never tasks.
func ParseMilestone(content string) ([]Task, error) {
	lines := scanMarkdown(content)
	title := specTitle(lines)

	var (
		tasks     []Task
		open      = -1 // index in lines of the heading of the task being read
		openLevel int
		asideAt   int // level of the aside section being skipped; 0 when none
	)
	closeTask := func(end int) {
		if open >= 0 {
			tasks[len(tasks)-1].Description = body(lines[open+1 : end])
			open = -1
		}
	}
	for i, l := range lines {
		if l.hidden || l.level == 0 {
			continue
		}
		if asideAt > 0 {
			if l.level > asideAt {
				continue
			}
			asideAt = 0
		}
		if i != title {
			if id, t, ok := parseTaskHeading(l.heading); ok {
				closeTask(i)
				tasks = append(tasks, Task{ID: id, Title: t, Line: i + 1})
				open, openLevel = i, l.level
				continue
			}
		}
		if open >= 0 && l.level <= openLevel {
			closeTask(i)
		}
		if isAside(l.heading) {
			asideAt = l.level
		}
	}
	closeTask(len(lines))

	if len(tasks) == 0 {
		return nil, ErrNoTasks
	}
	seen := make(map[string]int, len(tasks))
	for _, t := range tasks {
		if first, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("duplicate task id %q on lines %d and %d", t.ID, first, t.Line)
		}
		seen[t.ID] = t.Line
	}
	return tasks, nil
}

// specTitle finds a document whose title reads like a task ("# Task 041.c: …")
// but which is a specification of that one task, organised in sections of its
// own: its title is not a task to run. It returns the title's line index, or -1.
// A level-1 task heading with other level-1 task headings beside it, or with no
// sections under it, is an ordinary task.
func specTitle(lines []mdLine) int {
	first, next := -1, -1
	for i, l := range lines {
		if l.hidden || l.level == 0 {
			continue
		}
		switch {
		case first < 0:
			first = i
		case next < 0:
			next = i
		}
		if l.level == 1 && i != first {
			if _, _, ok := parseTaskHeading(l.heading); ok {
				return -1
			}
		}
	}
	if first < 0 || lines[first].level != 1 || next < 0 || lines[next].level == 1 {
		return -1
	}
	if _, _, ok := parseTaskHeading(lines[first].heading); !ok {
		return -1
	}
	return first
}

// body is a task's description: its lines as written, without the blank lines
// and separators that surround it.
func body(lines []mdLine) string {
	start, end := 0, len(lines)
	for start < end && isBlank(lines[start].text) {
		start++
	}
	for end > start && (isBlank(lines[end-1].text) || !lines[end-1].hidden && isThematicBreak(lines[end-1].text)) {
		end--
	}
	texts := make([]string, 0, end-start)
	for _, l := range lines[start:end] {
		texts = append(texts, l.text)
	}
	return strings.TrimRight(strings.Join(texts, "\n"), " \t")
}
