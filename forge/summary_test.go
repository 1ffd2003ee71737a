package forge

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchrun/orch/jobs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// completedRun is a run of two tasks on a branch: the first needed a human twice (a choice in Slack, an answer at the
// terminal), the second was forced through; one question timed out.
func completedRun() *jobs.Run {
	return &jobs.Run{
		ID: "r-abcdefghij", PlanPath: "plans/login.md", PlanTitle: "Add login", Status: jobs.RunCompleted,
		CreatedAt: t0, EndedAt: t0.Add(12*time.Minute + 3*time.Second),
		Git: &jobs.Git{Repo: "https://github.com/acme/app.git", Base: "main",
			BaseCommit: "0123456789abcdef0123456789abcdef01234567", Branch: "orch/r-abcdefghij",
			Commits: 3, FilesChanged: 5, Insertions: 120, Deletions: 30},
		Tasks: []*jobs.Task{
			{ID: "1", Title: "Login form", Status: jobs.TaskCompleted, Commit: "89abcdef0123456789abcdef0123456789abcdef",
				Summary: "Added the form and its handler.\nAsked @alice and @acme/security to look at the session cookie.",
				Attempts: []*jobs.Attempt{
					{N: 1, CostUSD: 0.10, InputTokens: 1000, OutputTokens: 200,
						Brain: jobs.BrainUsage{Calls: 1, CostUSD: 0.01, InputTokens: 300, OutputTokens: 50}},
					{N: 2, CostUSD: 0.20, InputTokens: 2000, OutputTokens: 400},
				}},
			{ID: "2", Title: "Tests | e2e", Status: jobs.TaskForced, Summary: "",
				Attempts: []*jobs.Attempt{{N: 1, CostUSD: 0.04, InputTokens: 500, OutputTokens: 100}}},
		},
		Escalations: []*jobs.Escalation{
			{ID: "e-1", TaskID: "1", Trigger: jobs.TriggerAttemptCap, Attempt: 2, CreatedAt: t0.Add(time.Minute),
				Question: "Task 1 failed 2 times with similar errors.\nWhat now?",
				Options:  []jobs.Option{{Key: "A", Label: "Retry with guidance"}, {Key: "B", Label: "Skip the flaky check"}},
				Resolution: &jobs.Resolution{Type: jobs.ResolveChoose, Key: "b", By: "U0123ABC", Via: "slack",
					At: t0.Add(3 * time.Minute), Reason: "the check is known to flake"}},
			{ID: "e-2", TaskID: "1", Trigger: jobs.TriggerNeedsHelp, Attempt: 3, CreatedAt: t0.Add(4 * time.Minute),
				Question: "Which session store: Redis or cookies?",
				Resolution: &jobs.Resolution{Type: jobs.ResolveAnswer, Text: "Cookies, signed; ask @bob if unsure.",
					By: "alice", Via: "cli", At: t0.Add(5 * time.Minute)}},
			{ID: "e-3", TaskID: "2", Trigger: jobs.TriggerCustom, Name: "migration", CreatedAt: t0.Add(6 * time.Minute),
				Question:   "The agent wants to run a migration.",
				Resolution: &jobs.Resolution{Type: jobs.ResolveRetry, By: "orch", Via: "timeout", At: t0.Add(8 * time.Minute)}},
			{ID: "e-4", TaskID: "2", Trigger: jobs.TriggerPermanent, Question: "The test runner is missing.",
				Resolution: &jobs.Resolution{Type: jobs.ResolveForce, By: "bob", Via: "slack", At: t0.Add(9 * time.Minute)}},
		},
	}
}

func TestSummaryGolden(t *testing.T) {
	title, body := Summary(completedRun())
	if title != "orch: Add login" {
		t.Errorf("title = %q", title)
	}
	golden := filepath.Join("testdata", "summary.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if body != string(want) {
		t.Errorf("body differs from %s (go test ./forge -run TestSummaryGolden -update rewrites it):\n%s", golden, body)
	}
}

func TestSummaryContent(t *testing.T) {
	_, body := Summary(completedRun())
	for _, want := range []string{
		// The run and its branch.
		"Run `r-abcdefghij` of plan `plans/login.md`: **completed** in 12m3s",
		"`orch/r-abcdefghij` from `main` at 0123456",
		"3 commits · 5 files changed, 120 insertions(+), 30 deletions(-)",
		// The cost: every attempt, agent and brain.
		"$0.3500 · 3800 tokens in, 750 out (agent and brain, 3 attempts)",
		// The tasks: status, commit, summary.
		"- **1** Login form — completed · 89abcde",
		"  Added the form and its handler.",
		"- **2** Tests | e2e — forced",
		// The humans' decisions: what was asked, who, where, what.
		"- **1 (Login form)** · attempt cap · attempt 2",
		"  > Task 1 failed 2 times with similar errors.\n  > What now?",
		"U0123ABC chose B) Skip the flaky check in Slack (2026-03-01 09:03 UTC)",
		"Reason: the check is known to flake",
		"alice answered at the terminal (2026-03-01 09:05 UTC):\n  > Cookies, signed;",
		"bob forced the task to continue (risk acknowledged) in Slack",
		// What orch settled by itself, apart.
		"### Questions settled without a human",
		"- **2 (Tests | e2e)** · custom trigger migration",
		"orch asked for one more attempt on timeout",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	humans := body[strings.Index(body, "### Decisions taken by humans"):strings.Index(body, "### Questions settled without a human")]
	if strings.Contains(humans, "timeout") {
		t.Errorf("a timeout is listed as a human's decision:\n%s", humans)
	}
	for _, mention := range []string{"@alice", "@acme/security", "@bob"} {
		if strings.Contains(body, mention) {
			t.Errorf("body mentions %s", mention)
		}
	}
	if !strings.Contains(body, "@\u200balice") {
		t.Errorf("the mention is gone rather than defused:\n%s", body)
	}
}

func TestSummaryTitle(t *testing.T) {
	one := &jobs.Run{ID: "r-1", Tasks: []*jobs.Task{{ID: "1", Title: "Fix the\nbuild"}}}
	two := &jobs.Run{ID: "r-2", Tasks: []*jobs.Task{{ID: "1", Title: "a"}, {ID: "2", Title: "b"}}}
	long := &jobs.Run{ID: "r-3", PlanTitle: strings.Repeat("ü", 400)}
	for _, tc := range []struct {
		run  *jobs.Run
		want string
	}{
		{one, "orch: Fix the build"},
		{two, "orch: run r-2"},
		{&jobs.Run{ID: "r-4", PlanTitle: "  Plan  "}, "orch: Plan"},
		{long, "orch: " + strings.Repeat("ü", MaxTitle-len("orch: ")-1) + "…"},
	} {
		if got, _ := Summary(tc.run); got != tc.want {
			t.Errorf("title of %s = %q, want %q", tc.run.ID, got, tc.want)
		}
	}
}

func TestSummaryWithoutBranchOrHumans(t *testing.T) {
	_, body := Summary(&jobs.Run{ID: "r-5", Status: jobs.RunCompleted,
		Tasks: []*jobs.Task{{ID: "1", Title: "Only", Status: jobs.TaskCompleted, Commit: "not-a-sha"}}})
	if strings.Contains(body, "**Branch**") || strings.Contains(body, "not-a-sha") {
		t.Errorf("body names a branch or a bad commit:\n%s", body)
	}
	if !strings.Contains(body, "_None: the run needed no human._") || !strings.Contains(body, "$0.0000 · 0 tokens in, 0 out") {
		t.Errorf("body:\n%s", body)
	}
}

func TestSummaryFitsGitHub(t *testing.T) {
	r := completedRun()
	r.ID = "r-big"
	for i := range 60 {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: "t" + string(rune('a'+i%26)), Title: "Task", Status: jobs.TaskCompleted,
			Summary: strings.Repeat("Résumé 🚀 ", 1000)})
	}
	_, body := Summary(r)
	if len(body) > MaxBody {
		t.Errorf("body of %d bytes, GitHub takes %d", len(body), MaxBody)
	}
	if !utf8.ValidString(body) {
		t.Error("body is not valid UTF-8")
	}
	for _, want := range []string{"**Cost**", "**Branch**", "The rest is cut", "`orch status r-big`", "`orch escalation log r-big`"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	// One task's summary is bounded: the cut leaves room for many tasks rather than one.
	if n := strings.Count(body, "- **t"); n < 10 {
		t.Errorf("only %d tasks fit", n)
	}
}

// What a person pasted into an answer, or a plan's title, goes into a public pull request: orch's own secrets are
// taken out first, and the body still fits GitHub when the marker is longer than the value it replaces.
func TestSummaryRedacted(t *testing.T) {
	const token = "w3b-t0ken"
	r := completedRun()
	r.PlanTitle = "Deploy with " + token
	r.Escalations[0].Resolution = &jobs.Resolution{Type: jobs.ResolveAnswer, By: "alice", Via: "web", At: t0,
		Text: "use " + token + " to sign in"}
	redact := strings.NewReplacer(token, "[REDACTED:ORCH_WEB_TOKEN]").Replace
	title, body := SummaryRedacted(r, redact)
	if strings.Contains(title+body, token) {
		t.Fatalf("the secret is in the pull request:\n%s\n%s", title, body)
	}
	if !strings.Contains(title, "[REDACTED:ORCH_WEB_TOKEN]") || !strings.Contains(body, "use [REDACTED:ORCH_WEB_TOKEN] to sign in") {
		t.Errorf("title %q, body:\n%s", title, body)
	}
	if plainTitle, plain := Summary(r); !strings.Contains(plainTitle+plain, token) {
		t.Error("Summary without a redactor changed the texts")
	}

	for i := range 60 {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: "t" + string(rune('a'+i%26)), Title: "Task", Status: jobs.TaskCompleted,
			Summary: strings.Repeat(token+" ", 1000)})
	}
	if _, body := SummaryRedacted(r, redact); len(body) > MaxBody || strings.Contains(body, token) {
		t.Errorf("body of %d bytes (GitHub takes %d), holding the secret: %t", len(body), MaxBody, strings.Contains(body, token))
	}
}

// A run asked for in a GitHub issue closes it when its pull request is merged; any other run closes nothing.
func TestSummaryClosesItsIssue(t *testing.T) {
	r := &jobs.Run{ID: "r-1", Status: jobs.RunCompleted, Origin: jobs.Origin{Kind: "github", User: "ann", Repo: "acme/api", Issue: 12}}
	_, body := Summary(r)
	if !strings.Contains(body, "\nOrch-Run: r-1\nCloses #12\n") {
		t.Errorf("body:\n%s", body)
	}
	r.Origin = jobs.Origin{Kind: "slack", User: "U1", Issue: 12}
	if _, body := Summary(r); strings.Contains(body, "Closes") || !strings.Contains(body, "Orch-Run: r-1") {
		t.Errorf("a Slack run's body:\n%s", body)
	}
}
