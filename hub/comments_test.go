package hub

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func commentRun(status jobs.RunStatus) *jobs.Run {
	r := &jobs.Run{ID: "r-20261128-abc", Status: status, PlanPath: "plans/cache.md", PlanTitle: "Add a cache",
		CreatedAt: t0, Options: jobs.Options{MaxAttempts: 3},
		Tasks: []*jobs.Task{
			{ID: "1.1", Title: "Add the cache", Status: jobs.TaskCompleted,
				Attempts: []*jobs.Attempt{{N: 1, CostUSD: 0.12, InputTokens: 1000, OutputTokens: 234}}},
			{ID: "1.2", Title: "Wire it in", Status: jobs.TaskRunning, Failures: 1},
		}}
	if status.Terminal() {
		r.EndedAt = t0.Add(3*time.Minute + 4*time.Second)
	}
	return r
}

func question(trigger jobs.Trigger) *jobs.Escalation {
	e := &jobs.Escalation{ID: "e1", TaskID: "1.2", Trigger: trigger, Source: "agent", Attempt: 2, CreatedAt: t0,
		Question: "Which store should the cache use? @acme/security said Redis.\nThe token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		Options:  []jobs.Option{{Key: "A", Label: "Redis"}, {Key: "B", Label: "In memory"}}, Recommendation: "B",
		Output: "I looked at client.go.\n```\n</details>\n@ann should decide.\n```"}
	switch trigger {
	case jobs.TriggerApproval:
		e.Question, e.Output, e.Recommendation = "Bash: git push --force origin main", "", ""
		e.Options = escalation.ApprovalOptions("Bash(git push:*)")
	case jobs.TriggerGate:
		e.Question, e.Output, e.Recommendation = "Ship it?", "", ""
		e.Options = []jobs.Option{{Key: "Y", Label: "Yes"}, {Key: "N", Label: "No"}}
	case jobs.TriggerChat:
		e.Question, e.Options, e.Recommendation, e.Output = "I have a draft. Anything to change?", nil, "", ""
	}
	return e
}

func goldenComments() map[string]string {
	queued := commentRun(jobs.RunQueued)
	running := commentRun(jobs.RunRunning)
	parked := commentRun(jobs.RunParked)
	parked.Escalations = []*jobs.Escalation{question(jobs.TriggerNeedsHelp)}
	answered := commentRun(jobs.RunParked) // answered, and not yet taken up by a worker
	completed := commentRun(jobs.RunCompleted)
	completed.Tasks[1].Status = jobs.TaskCompleted
	completed.Git = &jobs.Git{Branch: "orch/r-20261128-abc", Base: "main", BaseCommit: "1111111", Commits: 2,
		FilesChanged: 3, Insertions: 40, Deletions: 2, Push: "origin", Pushed: "2222222",
		PullRequest: "https://github.com/acme/api/pull/7"}
	failed := commentRun(jobs.RunFailed)
	failed.Reason = "tests failed: @ann broke `make test`; token ghp_abcdefghijklmnopqrstuvwxyz0123456789"

	byWeb := question(jobs.TriggerNeedsHelp)
	byWeb.Resolution = &jobs.Resolution{Type: jobs.ResolveChoose, Key: "B", By: "ann", Via: "web", At: t0.Add(3 * time.Minute)}
	aborted := question(jobs.TriggerNeedsHelp)
	aborted.Resolution = &jobs.Resolution{Type: jobs.ResolveAbort, Reason: "wrong repository, ask @bob", By: "octocat",
		Via: "github", At: t0.Add(90 * time.Second)}
	review := commentRun(jobs.RunCompleted)
	review.Tasks[0].Commit, review.Tasks[0].Summary = strings.Repeat("4", 40), "Guarded the map with a mutex, as @bob asked."
	review.Tasks[1].Status, review.Tasks[1].Summary = jobs.TaskCompleted, "The sleep waits for the janitor. Token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	review.Git = &jobs.Git{Branch: "orch/r-20261128-abc", Head: strings.Repeat("4", 40), Pushed: strings.Repeat("4", 40)}
	moved := commentRun(jobs.RunCompleted)
	moved.Tasks[0].Commit = strings.Repeat("4", 40)
	moved.Git = &jobs.Git{Branch: "orch/r-20261128-abc", Head: strings.Repeat("4", 40), Pushed: strings.Repeat("3", 40)}
	unaddressed := commentRun(jobs.RunFailed)
	unaddressed.Reason = "the agent gave up"
	return map[string]string{
		"reply_commit":        ThreadReply(review, review.Tasks[0]),
		"reply_answer":        ThreadReply(review, review.Tasks[1]),
		"reply_not_pushed":    ThreadReply(moved, moved.Tasks[0]),
		"reply_failed":        ThreadReply(unaddressed, unaddressed.Tasks[1]),
		"checks_same":         ChecksQuestion([]string{"test", "lint"}, 3, 2, "@orch"),
		"checks_cap":          ChecksQuestion([]string{"test"}, 1, 3, "@orch"),
		"status_queued":       StatusComment(queued, "", ""),
		"status_running":      StatusComment(running, "Task 1.2: Wire it in — attempt 2/3", "https://orch.example.com/runs/r-20261128-abc"),
		"status_parked":       StatusComment(parked, "NEEDS HUMAN INPUT", ""),
		"status_answered":     StatusComment(answered, "Answered by ann (github) after 3m0s: chose B) In memory", ""),
		"status_completed":    StatusComment(completed, "ignored at the end", "https://orch.example.com/runs/r-20261128-abc"),
		"status_failed":       StatusComment(failed, "", ""),
		"question_needs":      QuestionComment(parked, question(jobs.TriggerNeedsHelp), "@orch"),
		"question_approval":   QuestionComment(parked, question(jobs.TriggerApproval), "@orch"),
		"question_gate":       QuestionComment(parked, question(jobs.TriggerGate), "@orch"),
		"question_chat":       QuestionComment(parked, question(jobs.TriggerChat), "@orch"),
		"answered_web":        AnsweredComment(running, byWeb),
		"answered_abort":      AnsweredComment(commentRun(jobs.RunAborted), aborted),
		"answered_unanswered": AnsweredComment(parked, question(jobs.TriggerGate)),
	}
}

func TestCommentsGolden(t *testing.T) {
	for name, got := range goldenComments() {
		file := filepath.Join("testdata", "golden", name+".md")
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test ./hub -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from %s:\n%s", name, file, got)
		}
	}
}

// live is a mention that would notify someone: an @ and a name, outside code.
var live = regexp.MustCompile(`(^|[^\w@.\x60\x{200b}])@[A-Za-z0-9]`)

// Nothing a run says notifies anyone, leaks a token, or escapes the block it is put in.
func TestCommentsAreSafe(t *testing.T) {
	for name, got := range goldenComments() {
		if strings.Contains(got, "ghp_abcdefghijklmnopqrstuvwxyz0123456789") {
			t.Errorf("%s shows a token", name)
		}
		prose := stripCode(got)
		for _, m := range live.FindAllString(prose, -1) {
			if !strings.Contains(m, "@orch") {
				t.Errorf("%s mentions someone: %q", name, m)
			}
		}
		if strings.Count(got, "<details>") != strings.Count(got, "</details>")-strings.Count(codeOf(got), "</details>") {
			t.Errorf("%s: the agent's words close a <details> of the comment:\n%s", name, got)
		}
	}
}

// splitCode separates a comment's fenced code blocks (a fence of three or more backticks, closed by a line that is
// the same fence) and code spans from the rest.
func splitCode(s string) (prose, code string) {
	var p, c strings.Builder
	fence := ""
	for _, line := range strings.Split(s, "\n") {
		switch {
		case fence != "":
			c.WriteString(line + "\n")
			if line == fence {
				fence = ""
			}
		case strings.HasPrefix(line, "```"):
			fence = line[:len(line)-len(strings.TrimLeft(line, "`"))]
			c.WriteString(line + "\n")
		default:
			p.WriteString(span.ReplaceAllString(line, "") + "\n")
			c.WriteString(strings.Join(span.FindAllString(line, -1), " ") + "\n")
		}
	}
	return p.String(), c.String()
}

var span = regexp.MustCompile("`+[^`]*`+")

func stripCode(s string) string { p, _ := splitCode(s); return p }

func codeOf(s string) string { _, c := splitCode(s); return c }
