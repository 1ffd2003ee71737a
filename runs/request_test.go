package runs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

func TestPrepareRequest(t *testing.T) {
	ctx := context.Background()
	ws, _ := filepath.Abs("testdata")
	opts := simOptions()
	opts.SimScenario = filepath.Join(ws, "two.sim.yaml")
	origin := jobs.Origin{Kind: "slack", User: "U1", Channel: "C1", ThreadTS: "1700000000.000100"}

	p, err := Prepare(ctx, Request{Text: "  fix the flaky retry test in jobs\nit fails one run in ten  ",
		Context:    "<@U2>: it started after the backoff change\nthe token is AKIA0123456789ABCDEF",
		FollowUpOf: "r-before", Options: opts, Workspace: ws, Origin: origin, Confined: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Run
	if len(r.Tasks) != 1 || r.Tasks[0].ID != RequestTaskID || r.Tasks[0].Kind != jobs.KindAgent {
		t.Fatalf("want one agent task, got %+v", r.Tasks)
	}
	if r.PlanPath != "" || r.PlanTitle != "fix the flaky retry test in jobs" || r.Tasks[0].Title != r.PlanTitle {
		t.Fatalf("plan %q, title %q, task title %q", r.PlanPath, r.PlanTitle, r.Tasks[0].Title)
	}
	if r.Request != "fix the flaky retry test in jobs\nit fails one run in ten" || r.FollowUpOf != "r-before" || r.Origin != origin {
		t.Fatalf("request %q, follow-up of %q, origin %+v", r.Request, r.FollowUpOf, r.Origin)
	}
	d := r.Tasks[0].Description
	if !strings.HasPrefix(d, r.Request+"\n\n## Context\n\n<@U2>: it started after the backoff change") {
		t.Fatalf("description:\n%s", d)
	}
	if strings.Contains(d, "AKIA0123456789ABCDEF") {
		t.Fatal("a secret in the conversation reached the task")
	}
	if r.Graph != "" || p.EndToEnd != "" {
		t.Fatalf("a request in words has no graph and no end-to-end phase: %q %q", r.Graph, p.EndToEnd)
	}

	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"empty", Request{Text: " \n\t", Context: "x", Options: opts, Workspace: ws}, "the request is empty"},
		{"NUL", Request{Text: "fix\x00it", Options: opts, Workspace: ws}, "NUL byte"},
		{"no scenario", Request{Text: "fix it", Options: simOptions(), Workspace: ws}, "needs a scenario"},
		{"scenario outside", Request{Text: "fix it", Options: jobs.Options{Agent: "sim", SimScenario: "/etc/hostname"},
			Workspace: ws, Confined: true}, "outside the workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare(ctx, tc.req, nil)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// A request in a repository gets a branch of its own; a follow-up's branch starts from the run it follows.
func TestPrepareRequestBranch(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@x",
		"commit", "-q", "--allow-empty", "-m", "one"}, {"branch", "orch/r-before"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	opts := jobs.Options{Agent: "cmd:true", Sandbox: "local"}
	p, err := Prepare(ctx, Request{Text: "tidy up", Options: opts, Workspace: repo}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := p.Run.Git; g == nil || g.Branch != jobs.BranchPrefix+p.Run.ID || g.Base != "main" {
		t.Fatalf("git: %+v", g)
	}
	p, err = Prepare(ctx, Request{Text: "now the docs", FollowUpOf: "r-before", Options: opts, Workspace: repo,
		Git: Git{Base: "orch/r-before"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := p.Run.Git; g == nil || g.Base != "orch/r-before" || g.BaseCommit == "" {
		t.Fatalf("follow-up git: %+v", g)
	}
}

// A run that goes on with a pull request's branch works on that branch from the commit it is at, pushes over that
// commit alone and opens no pull request; orch goes on with no branch but its own.
func TestPrepareRequestContinuesABranch(t *testing.T) {
	ctx := context.Background()
	opts := jobs.Options{Agent: "cmd:true", Sandbox: "local"}
	at := strings.Repeat("ab", 20)
	req := func(g Git) Request { return Request{Text: "address the review", Options: opts, Git: g} }
	p, err := Prepare(ctx, req(Git{URL: "https://github.test/acme/app.git", Continue: &Continuation{Branch: "orch/r-0123456789",
		At: at, PullRequest: "https://github.test/acme/app/pull/4"}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := jobs.Git{URL: "https://github.test/acme/app.git", Base: "orch/r-0123456789", BaseCommit: at,
		Branch: "orch/r-0123456789", Push: "origin", Pushed: at, PullRequest: "https://github.test/acme/app/pull/4"}
	if g := p.Run.Git; g == nil || !reflect.DeepEqual(*g, want) {
		t.Fatalf("git: %+v\nwant %+v", g, want)
	}
	for name, tc := range map[string]struct {
		g    Git
		want string
	}{
		"no URL":            {Git{Continue: &Continuation{Branch: "orch/r-1", At: at}}, "needs the repository's URL"},
		"a person's branch": {Git{URL: "u", Continue: &Continuation{Branch: "main", At: at}}, `not with "main"`},
		"the prefix alone":  {Git{URL: "u", Continue: &Continuation{Branch: "orch/", At: at}}, "branches of its own"},
		"a short commit":    {Git{URL: "u", Continue: &Continuation{Branch: "orch/r-1", At: "abc123"}}, "not a full commit name"},
		"an upper-case one": {Git{URL: "u", Continue: &Continuation{Branch: "orch/r-1", At: strings.ToUpper(at)}}, "not a full commit name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Prepare(ctx, req(tc.g), nil)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// A request's tasks as a surface found them (a review's threads) are the run's tasks, each with the request's context;
// tasks that cannot be told apart or say nothing are refused.
func TestPrepareRequestTasks(t *testing.T) {
	ctx := context.Background()
	opts := jobs.Options{Agent: "cmd:true", Sandbox: "local"}
	req := func(tasks ...pipeline.Task) Request {
		return Request{Text: "Address the review of #4", Context: "The pull request adds a cache.", Tasks: tasks, Options: opts}
	}
	p, err := Prepare(ctx, req(pipeline.Task{ID: "1", Title: "cache.go:12", Description: "Use a sync.Map here. token=ghp_" + strings.Repeat("a", 36)},
		pipeline.Task{ID: "2", Title: "cache_test.go:3", Description: "Why a sleep?"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Run; r.PlanTitle != "Address the review of #4" || len(r.Tasks) != 2 || r.Tasks[1].Title != "cache_test.go:3" ||
		!strings.HasSuffix(r.Tasks[0].Description, "The pull request adds a cache.") || strings.Contains(r.Tasks[0].Description, "ghp_aaaa") {
		t.Fatalf("run: %q, tasks %+v", r.PlanTitle, r.Tasks)
	}
	many := make([]pipeline.Task, maxRequestTasks+1)
	for i := range many {
		many[i] = pipeline.Task{ID: fmt.Sprint(i + 1), Title: "t", Description: "d"}
	}
	for name, tc := range map[string]struct {
		tasks []pipeline.Task
		want  string
	}{
		"twice the same id": {[]pipeline.Task{{ID: "1", Title: "a", Description: "b"}, {ID: "1", Title: "c", Description: "d"}}, "ids of their own"},
		"no description":    {[]pipeline.Task{{ID: "1", Title: "a", Description: " "}}, "no title or no description"},
		"a NUL":             {[]pipeline.Task{{ID: "1", Title: "a", Description: "b\x00"}}, "NUL"},
		"too many":          {many, "at most 50"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Prepare(ctx, req(tc.tasks...), nil)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}
