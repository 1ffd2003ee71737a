package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func md(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseMilestoneSeeds(t *testing.T) {
	tests := []struct {
		file   string
		want   []string // "id title"
		starts []string // each description's first line
	}{
		{
			file: "m4-escalation-loop-detection.md",
			want: []string{
				"4.1 Create Escalation Handler",
				"4.2 Create User Input Handler",
				"4.3 Create Loop Detector",
				"4.4 Integrate Escalation into Task Runner",
				"4.5 Integrate Loop Detection into Milestone Runner",
				"4.6 Add Escalation Metrics",
				"4.7 Create Ambiguous Task Test Plan",
				"4.8 Create Doomed Task Test Plan",
				"4.9 Create LLM Output Interpreter",
				"4.10 Integrate LLM Interpreter into Escalation",
				"4.11 Update Escalation Tests for LLM Interpreter",
			},
		},
		{
			file: "v2-m3-retry-escalate-brain.md",
			want: []string{
				"3.1 Add should_retry_or_escalate() to HaikuBrain",
				"3.2 Wire retry decision to task execution loop",
				"3.3 Delete loop_detector.py",
				"3.4 M3 E2E Test",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			content := readTestdata(t, tt.file)
			tasks, err := ParseMilestone(content)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, task := range tasks {
				got = append(got, task.ID+" "+task.Title)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("tasks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			lines := splitLines(content)
			for _, task := range tasks {
				if h := lines[task.Line-1]; !strings.Contains(h, "Task "+task.ID+": "+task.Title) {
					t.Errorf("task %s: line %d is %q", task.ID, task.Line, h)
				}
				if strings.HasPrefix(task.Description, "\n") || strings.HasSuffix(task.Description, "---") {
					t.Errorf("task %s: description not trimmed: %q", task.ID, task.Description)
				}
			}
		})
	}
}

func TestParseMilestoneSeedBodies(t *testing.T) {
	tasks, err := ParseMilestone(readTestdata(t, "m4-escalation-loop-detection.md"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Task{}
	for _, task := range tasks {
		byID[task.ID] = task
	}
	// 4.7 carries a whole example plan in a fence: its headings stay in the body.
	if d := byID["4.7"].Description; !strings.Contains(d, "```markdown\n# Test Milestone: Ambiguous Task\n\n## Task 1.1: Implement caching") {
		t.Errorf("4.7 lost its fenced example plan:\n%s", d)
	}
	// The last task stops at "## Milestone Verification".
	if d := byID["4.11"].Description; strings.Contains(d, "Milestone Verification") || !strings.HasSuffix(d, "All tests pass: `make test-unit`") {
		t.Errorf("4.11 body runs past its section:\n...%s", d[max(0, len(d)-200):])
	}
	if d := byID["4.1"].Description; !strings.HasPrefix(d, "**File:** `orchestrator/escalation.py`\n**Type:** CODING") {
		t.Errorf("4.1 body starts %q", d[:min(80, len(d))])
	}
}

func TestParseMilestoneNoTasksSeeds(t *testing.T) {
	for _, file := range []string{
		"041c-needs-human-escalation.md",
		"v2-architecture-haiku-brain.md",
		"stage4-human-in-the-loop.md",
	} {
		t.Run(file, func(t *testing.T) {
			tasks, err := ParseMilestone(readTestdata(t, file))
			if !errors.Is(err, ErrNoTasks) {
				t.Fatalf("got %v, %v; want ErrNoTasks", tasks, err)
			}
		})
	}
}

// task is a compact expected Task: id, title, line, description.
type task struct {
	id, title string
	line      int
	desc      string
}

func TestParseMilestone(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []task
		wantErr string // substring; ErrNoTasks is checked with errors.Is
	}{
		// Levels.
		{
			name: "level 1 tasks side by side",
			in:   md("# Task 1: Alpha", "a body", "# Task 2: Beta", "b body"),
			want: []task{{"1", "Alpha", 1, "a body"}, {"2", "Beta", 3, "b body"}},
		},
		{
			name: "a lone level-1 task is a task",
			in:   md("# Task 1: Only", "", "do it"),
			want: []task{{"1", "Only", 1, "do it"}},
		},
		{
			name:    "a spec titled like a task, in sections, has no tasks",
			in:      md("# Task 041.c: Escalation", "", "## Description", "text", "## Scope", "more"),
			wantErr: "no tasks",
		},
		{
			name: "a task-like title over task sections is the title",
			in:   md("# Task 1: Parent", "## Task 1.1: A", "a", "## Task 1.2: B", "b"),
			want: []task{{"1.1", "A", 2, "a"}, {"1.2", "B", 4, "b"}},
		},
		{
			name: "seven hashes is not a heading",
			in:   md("####### Task 1: X", "body"), wantErr: "no tasks",
		},
		{
			name: "no blank after the hashes is not a heading",
			in:   md("##Task 1: X", "body"), wantErr: "no tasks",
		},
		{
			name: "three spaces of indent is a heading, four is code",
			in:   md("   ## Task 1: Indented", "body", "    ## Task 2: Code", "more"),
			want: []task{{"1", "Indented", 1, "body\n    ## Task 2: Code\nmore"}},
		},
		{
			name: "a tab indent is code",
			in:   md("\t## Task 1: Code"), wantErr: "no tasks",
		},
		{
			name: "mixed levels",
			in:   md("# Plan", "## Task 1: A", "a", "### Task 1.1: Sub", "s", "## Task 2: B", "b"),
			want: []task{{"1", "A", 2, "a"}, {"1.1", "Sub", 4, "s"}, {"2", "B", 6, "b"}},
		},

		// Where a body ends.
		{
			name: "body ends at a same-level non-task heading",
			in:   md("### Task 1: A", "body", "### Notes", "notes", "### Task 2: B", "b"),
			want: []task{{"1", "A", 1, "body"}, {"2", "B", 5, "b"}},
		},
		{
			name: "body ends at a higher-level heading",
			in:   md("### Task 1: A", "body", "## Milestone Checklist", "- [ ] done"),
			want: []task{{"1", "A", 1, "body"}},
		},
		{
			name: "deeper headings stay in the body",
			in:   md("## Task 1: A", "body", "### Details", "d", "#### More", "m", "## Done"),
			want: []task{{"1", "A", 1, "body\n### Details\nd\n#### More\nm"}},
		},
		{
			name: "separators and blank lines around a body are dropped",
			in:   md("## Task 1: A", "", "", "body", "", "---", "", "***", "", "## Task 2: B", "", "b", "", "_ _ _"),
			want: []task{{"1", "A", 1, "body"}, {"2", "B", 10, "b"}},
		},
		{
			name: "an empty body",
			in:   md("## Task 1: A", "## Task 2: B"),
			want: []task{{"1", "A", 1, ""}, {"2", "B", 2, ""}},
		},

		// Fences.
		{
			name: "backtick fence hides headings and stays in the body",
			in:   md("## Task 1: A", "", "Intro", "", "```go", "## Task 9: not a task", "```", "", "---", "", "## Task 2: B"),
			want: []task{{"1", "A", 1, "Intro\n\n```go\n## Task 9: not a task\n```"}, {"2", "B", 11, ""}},
		},
		{
			name: "tilde fence",
			in:   md("## Task 1: A", "~~~markdown", "## Task 9: no", "~~~", "## Task 2: B"),
			want: []task{{"1", "A", 1, "~~~markdown\n## Task 9: no\n~~~"}, {"2", "B", 5, ""}},
		},
		{
			name: "a tilde fence does not close on backticks",
			in:   md("## Task 1: A", "~~~", "```", "## Task 9: no", "~~~", "## Task 2: B"),
			want: []task{{"1", "A", 1, "~~~\n```\n## Task 9: no\n~~~"}, {"2", "B", 6, ""}},
		},
		{
			name: "a longer fence holds a shorter one",
			in:   md("## Task 1: A", "````markdown", "```go", "## Task 8: no", "```", "## Task 9: no", "````", "## Task 2: B"),
			want: []task{{"1", "A", 1, "````markdown\n```go\n## Task 8: no\n```\n## Task 9: no\n````"}, {"2", "B", 8, ""}},
		},
		{
			name: "a longer closing fence closes",
			in:   md("```", "## Task 9: no", "`````", "## Task 1: A"),
			want: []task{{"1", "A", 4, ""}},
		},
		{
			name: "a fence line with text after it does not close",
			in:   md("```", "``` not closing", "## Task 9: no", "```", "## Task 1: A"),
			want: []task{{"1", "A", 5, ""}},
		},
		{
			name: "indented fences",
			in:   md("## Task 1: A", "   ```", "## Task 9: no", "  ```", "## Task 2: B"),
			want: []task{{"1", "A", 1, "   ```\n## Task 9: no\n  ```"}, {"2", "B", 5, ""}},
		},
		{
			name: "four spaces is code, not a fence",
			in:   md("## Task 1: A", "    ```", "## Task 2: B"),
			want: []task{{"1", "A", 1, "    ```"}, {"2", "B", 3, ""}},
		},
		{
			name: "inline triple backticks are not a fence",
			in:   md("```js code```", "## Task 1: A"),
			want: []task{{"1", "A", 2, ""}},
		},
		{
			name: "an unclosed fence runs to the end",
			in:   md("## Task 1: A", "```", "## Task 2: hidden", "---"),
			want: []task{{"1", "A", 1, "```\n## Task 2: hidden\n---"}},
		},
		{
			name: "a fence before any task",
			in:   md("```", "## Task 9: no", "```"), wantErr: "no tasks",
		},

		// Example and verification sections.
		{
			name: "example section hides task-like headings",
			in:   md("## Example", "### Task 9.1: Not real", "body", "## Task 1.1: Real", "r"),
			want: []task{{"1.1", "Real", 4, "r"}},
		},
		{
			name: "E2E test scenario",
			in:   md("# M", "## E2E Test Scenario", "### Task 1.1: Implement caching", "## Tasks", "### Task 4.1: Handler", "h"),
			want: []task{{"4.1", "Handler", 5, "h"}},
		},
		{
			name: "milestone verification ends the last task and hides its headings",
			in:   md("## Tasks", "### Task 4.11: Last", "body", "## Milestone Verification", "### Task 1.1: Run it", "check"),
			want: []task{{"4.11", "Last", 2, "body"}},
		},
		{
			name: "aside titles by leading words, any case, emphasised",
			in: md(
				"## EXAMPLES of plans", "### Task 9.1: no",
				"## **Verification**", "### Task 9.2: no",
				"## Test Steps:", "### Task 9.3: no",
				"## E2E Tests", "### Task 9.4: no",
				"## Example: caching", "### Task 9.5: no",
				"## Task 1: yes",
			),
			want: []task{{"1", "yes", 11, ""}},
		},
		{
			name: "a word that only starts like an aside is not one",
			in:   md("## Exampleness", "### Task 1: yes", "## Verifications", "### Task 2: yes"),
			want: []task{{"1", "yes", 2, ""}, {"2", "yes", 4, ""}},
		},
		{
			name: "an aside inside a task body stays in the body",
			in:   md("## Task 1: A", "a", "### Example", "#### Task 9: not real", "e", "### Notes", "n", "## Task 2: B"),
			want: []task{{"1", "A", 1, "a\n### Example\n#### Task 9: not real\ne\n### Notes\nn"}, {"2", "B", 8, ""}},
		},
		{
			name:    "a deeper heading does not end an aside",
			in:      md("## Examples", "### Intro", "#### Task 9: no", "### Task 9.1: no"),
			wantErr: "no tasks",
		},
		{
			name: "a task titled like an aside is a task",
			in:   md("### Task 3.4: M3 E2E Test", "x", "### Task 3.5: Example plugin", "y"),
			want: []task{{"3.4", "M3 E2E Test", 1, "x"}, {"3.5", "Example plugin", 3, "y"}},
		},

		// HTML comments.
		{
			name: "a comment hides headings",
			in:   md("<!--", "## Task 9: commented out", "-->", "## Task 1: A"),
			want: []task{{"1", "A", 4, ""}},
		},
		{
			name: "a comment inside a body stays in it",
			in:   md("## Task 1: A", "<!-- old:", "## Task 2: gone", "   -->", "a", "## Task 3: C"),
			want: []task{{"1", "A", 1, "<!-- old:\n## Task 2: gone\n   -->\na"}, {"3", "C", 6, ""}},
		},
		{
			name: "a one-line comment hides nothing after it",
			in:   md("<!-- note -->", "## Task 1: A", "<!-->", "## Task 2: B"),
			want: []task{{"1", "A", 2, "<!-->"}, {"2", "B", 4, ""}},
		},
		{
			name: "an unclosed comment runs to the end",
			in:   md("## Task 1: A", "<!--", "## Task 2: no"),
			want: []task{{"1", "A", 1, "<!--\n## Task 2: no"}},
		},
		{
			name: "a comment marker inside a fence is code",
			in:   md("```", "<!--", "```", "## Task 1: A"),
			want: []task{{"1", "A", 4, ""}},
		},

		// Line endings and BOM.
		{
			name: "CRLF",
			in:   "## Task 1.1: Foo\r\nbody\r\n\r\n```\r\n## Task 9: no\r\n```\r\n## Task 1.2: Bar ##\r\n",
			want: []task{{"1.1", "Foo", 1, "body\n\n```\n## Task 9: no\n```"}, {"1.2", "Bar", 7, ""}},
		},
		{
			name: "lone CR",
			in:   "## Task 1: A\rbody\r## Task 2: B\r",
			want: []task{{"1", "A", 1, "body"}, {"2", "B", 3, ""}},
		},
		{
			name: "BOM",
			in:   "\ufeff## Task 1: A\nbody\n",
			want: []task{{"1", "A", 1, "body"}},
		},

		// Heading forms.
		{
			name: "emphasis and separators",
			in: md(
				"## **Task 1: Bold all**",
				"## **Task 2:** Bold label",
				"## **Task 3**: Bold id",
				"## Task 4: **Bold title**",
				"## _Task 5: add_user_",
				"## __Task 6__ — Underscored",
				"## Task 7 – En dash",
				"## Task 8 - Hyphen",
				"## Task 9 : Spaced colon",
				"## Task 10: Closed ##",
				"## Task 11: C#",
				"## task 12: lower case",
				"## Task 13:NoSpace",
				"## Task 14",
				"## *Task 15: Italic*",
			),
			want: []task{
				{"1", "Bold all", 1, ""}, {"2", "Bold label", 2, ""}, {"3", "Bold id", 3, ""},
				{"4", "Bold title", 4, ""}, {"5", "add_user", 5, ""}, {"6", "Underscored", 6, ""},
				{"7", "En dash", 7, ""}, {"8", "Hyphen", 8, ""}, {"9", "Spaced colon", 9, ""},
				{"10", "Closed", 10, ""}, {"11", "C#", 11, ""}, {"12", "lower case", 12, ""},
				{"13", "NoSpace", 13, ""}, {"14", "", 14, ""}, {"15", "Italic", 15, ""},
			},
		},
		{
			name: "id forms",
			in:   md("## Task 1.1: a", "## Task 4.10: b", "## Task 2: c", "## Task A.3: d", "## Task 2-b: e", "## Task 041.c: f"),
			want: []task{{"1.1", "a", 1, ""}, {"4.10", "b", 2, ""}, {"2", "c", 3, ""}, {"A.3", "d", 4, ""}, {"2-b", "e", 5, ""}, {"041.c", "f", 6, ""}},
		},
		{
			name:    "prose headings about tasks are not tasks",
			in:      md("## Tasks", "## Task list", "## Task Breakdown: Phase 1", "### Task Interpretation Ambiguity", "## Tasking 1: x", "> ## Task 2: quoted", "- ## Task 3: listed"),
			wantErr: "no tasks",
		},

		// Errors.
		{name: "empty", in: "", wantErr: "no tasks"},
		{name: "prose only", in: md("# Notes", "nothing to do"), wantErr: "no tasks"},
		{
			name:    "duplicate ids",
			in:      md("## Task 1.1: A", "", "## Task 1.2: B", "", "## Task 1.1: C"),
			wantErr: `duplicate task id "1.1" on lines 1 and 5`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := ParseMilestone(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("got tasks %+v, want error %q", tasks, tt.wantErr)
				}
				if tt.wantErr == "no tasks" {
					if !errors.Is(err, ErrNoTasks) {
						t.Fatalf("got %v, want ErrNoTasks", err)
					}
				} else if !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrNoTasks) {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]task, len(tasks))
			for i, x := range tasks {
				got[i] = task{x.ID, x.Title, x.Line, x.Description}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestParseMilestoneEveryLevel(t *testing.T) {
	for level := 1; level <= 6; level++ {
		h := strings.Repeat("#", level)
		in := md(h+" Task 1: A", "a", h+" Task 2: B", "b")
		tasks, err := ParseMilestone(in)
		if err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		if len(tasks) != 2 || tasks[0].ID != "1" || tasks[1].ID != "2" || tasks[0].Description != "a" || tasks[1].Line != 3 {
			t.Errorf("level %d: %+v", level, tasks)
		}
	}
}

func FuzzParseMilestone(f *testing.F) {
	f.Add(readTestdata(f, "m4-escalation-loop-detection.md"))
	f.Add(readTestdata(f, "v2-m3-retry-escalate-brain.md"))
	f.Add(md("# Plan", "## Task 1.1: A", "```", "## Task 9: no", "```", "## Example", "### Task 8: no", "## Task 1.2 — B"))
	f.Add(md("<!--", "## Task 9: x", "-->", "### **Task A.3:** y ###"))
	f.Add("\ufeff## Task 1: A\r\n~~~~\r\n~~~\r\n## Task 2: B\r")
	f.Add(md("# Task 1: T", "## Task 1.1: A", "## Task 1.1: dup"))
	f.Add("## Task 1: \x00\xff")
	f.Fuzz(func(t *testing.T, content string) {
		tasks, err := ParseMilestone(content)
		if err != nil {
			if len(tasks) != 0 {
				t.Fatalf("error %v with %d tasks", err, len(tasks))
			}
			return
		}
		lines := splitLines(content)
		prev := 0
		for _, task := range tasks {
			if task.Line <= prev || task.Line > len(lines) {
				t.Fatalf("task %q: line %d after %d, of %d", task.ID, task.Line, prev, len(lines))
			}
			prev = task.Line
			if task.ID == "" || !strings.Contains(lines[task.Line-1], task.ID) {
				t.Fatalf("task %q: line %d is %q", task.ID, task.Line, lines[task.Line-1])
			}
			if strings.Contains(task.Title, "\n") {
				t.Fatalf("task %q: title %q spans lines", task.ID, task.Title)
			}
		}
	})
}
