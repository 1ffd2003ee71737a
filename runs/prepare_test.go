package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

func simOptions() jobs.Options {
	return jobs.Options{Agent: "sim", Brain: "heuristic", Sandbox: "local", MaxAttempts: 3}
}

func TestPrepareMilestone(t *testing.T) {
	ws, _ := filepath.Abs("testdata")
	p, err := Prepare(context.Background(), Request{Plan: "testdata/two.md", Options: simOptions(), Workspace: ws,
		Origin: jobs.Origin{Kind: "cli", User: "ann"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Run
	var ids []string
	for _, task := range r.Tasks {
		ids = append(ids, task.ID)
	}
	if strings.Join(ids, " ") != "1.1 1.2 e2e e2e-fix" || r.Status != jobs.RunQueued || r.PlanTitle != "Two tasks" ||
		r.PlanPath != "testdata/two.md" || r.Origin.User != "ann" || r.Graph != "" || p.Graph != nil {
		t.Fatalf("run: tasks %v, %+v", ids, r)
	}
	if strings.Contains(r.Tasks[1].Description, "AKIA0123456789ABCDEF") {
		t.Fatal("a secret in the plan reached the run")
	}
	if v := r.Task(jobs.VerifyTaskID); v.Kind != jobs.KindVerify || v.MaxAttempts != 1 ||
		!strings.HasPrefix(v.Description, "All the milestone's tasks are done.") || !strings.Contains(v.Description, "sh check.sh") {
		t.Fatalf("verification task: %+v", v)
	}
	if f := r.Task(jobs.FixTaskID); f.Kind != jobs.KindFix || !strings.HasPrefix(f.Description, "The milestone's end-to-end verification failed") {
		t.Fatalf("fix task: %+v", f)
	}
	if p.EndToEnd != "End-to-end phase: the verification on line 11 (1 command block); up to 5 fix attempts." {
		t.Fatalf("end-to-end note: %q", p.EndToEnd)
	}
	// The default scenario is the plan's, made absolute.
	if want, _ := filepath.Abs("testdata/two.sim.yaml"); r.Options.SimScenario != want {
		t.Fatalf("scenario %q", r.Options.SimScenario)
	}
}

func TestPrepareOneTaskAndPipelines(t *testing.T) {
	ctx := context.Background()
	p, err := Prepare(ctx, Request{Plan: "testdata/two.md", Task: "1.2", Options: simOptions()}, nil)
	if err != nil || len(p.Run.Tasks) != 1 || p.Run.Tasks[0].ID != "1.2" || p.EndToEnd != "" {
		t.Fatalf("one task: %+v, %v", p, err)
	}
	p, err = Prepare(ctx, Request{Plan: "testdata/gate.dot", Options: simOptions()}, nil)
	if err != nil || p.Graph == nil || p.Run.Graph == "" || p.Run.PlanTitle != "Review it" || len(p.Run.Tasks) != 2 {
		t.Fatalf("pipeline: %+v, %v", p, err)
	}
	p, err = Prepare(ctx, Request{Plan: "testdata/gate.dot", Task: "work", Options: simOptions()}, nil)
	if err != nil || p.Run.Graph != "" || len(p.Run.Tasks) != 1 {
		t.Fatalf("one node of a pipeline: %+v, %v", p, err)
	}
}

func TestPrepareRefusesBadRequests(t *testing.T) {
	ctx := context.Background()
	ws, _ := filepath.Abs("testdata")
	outside := filepath.Join(t.TempDir(), "elsewhere.sim.yaml")
	os.WriteFile(outside, []byte("default:\n  - output: x\n"), 0o600)
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	withAgent := func(a string) jobs.Options { o := simOptions(); o.Agent = a; return o }
	withScenario := func(s string) jobs.Options { o := simOptions(); o.SimScenario = s; return o }
	for _, tt := range []struct {
		name string
		req  Request
		want string
	}{
		{"no such task", Request{Plan: "testdata/two.md", Task: "9.9", Options: simOptions()}, `plan testdata/two.md has no task "9.9" (tasks: 1.1, 1.2)`},
		{"a gate is no agent task", Request{Plan: "testdata/gate.dot", Task: "gate", Options: simOptions()}, "gate is not an agent task but a human gate"},
		{"unknown agent", Request{Plan: "testdata/two.md", Options: withAgent("gpt")}, `--agent "gpt": want claude, codex, sim or cmd:TEMPLATE`},
		{"bad template", Request{Plan: "testdata/two.md", Options: withAgent("cmd:")}, "--agent cmd:"},
		{"missing scenario", Request{Plan: "testdata/two.md", Options: withScenario("testdata/nope.sim.yaml")}, "nope.sim.yaml"},
		{"scenario outside the workspace", Request{Plan: "testdata/two.md", Options: withScenario(outside), Workspace: ws, Confined: true},
			"scenario elsewhere.sim.yaml is outside the workspace"},
		{"no tasks", Request{Plan: "testdata/free.md", Options: simOptions()}, "no tasks found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Prepare(ctx, tt.req, nil)
			var pe *pipeline.PlanError
			if err == nil || !errors.Is(err, ErrInvalid) && !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// A workspace reached through a symlink confines the same way.
	if _, err := Prepare(ctx, Request{Plan: "testdata/two.md", Options: simOptions(), Workspace: link, Confined: true}, nil); err != nil {
		t.Fatalf("scenario inside a symlinked workspace: %v", err)
	}
	if _, err := Prepare(ctx, Request{Plan: "testdata/missing.md", Options: simOptions()}, nil); err == nil {
		t.Fatal("a missing plan was prepared")
	}
}

// A milestone without task headings is given to the brain — the same way from every front end — unless the brain is
// the heuristic one, which cannot read prose.
func TestPrepareAsksTheBrainForTasks(t *testing.T) {
	ctx := context.Background()
	calls := 0
	reading := jobs.BrainUsage{Backend: "anthropic", Model: "claude-haiku-4-5", Calls: 1, InputTokens: 900, OutputTokens: 120, CostUSD: 0.0015}
	find := func(ctx context.Context, opts jobs.Options, plan string) ([]pipeline.Task, jobs.BrainUsage, error) {
		calls++
		if !strings.Contains(plan, "build the parser") {
			t.Fatalf("the finder got %q", plan)
		}
		return []pipeline.Task{{ID: "1", Title: "Build the parser"}, {ID: "2", Title: "Wire it in"}}, reading, nil
	}
	llm := simOptions()
	llm.Brain = "anthropic"
	p, err := Prepare(ctx, Request{Plan: "testdata/free.md", Options: llm}, find)
	if err != nil || len(p.Run.Tasks) != 2 || p.Run.Tasks[1].Title != "Wire it in" ||
		p.Found != `plan testdata/free.md: no "Task <id>: <title>" headings; the anthropic brain found 2 tasks` {
		t.Fatalf("found: %+v, %q, %v", p, p.Found, err)
	}
	// What reading the plan cost is the run's, and counts in its spend and its brain's line.
	if p.Run.PlanBrain != reading || p.Run.Spent() != 0.0015 || p.Run.Costs().Brain.CostUSD != 0.0015 {
		t.Fatalf("the plan's reading: %+v, spent %v, brain %+v", p.Run.PlanBrain, p.Run.Spent(), p.Run.Costs().Brain)
	}
	if _, err := Prepare(ctx, Request{Plan: "testdata/free.md", Options: simOptions()}, find); !errors.Is(err, pipeline.ErrNoTasks) || calls != 1 {
		t.Fatalf("heuristic brain: %v, %d calls", err, calls)
	}
	broken := func(context.Context, jobs.Options, string) ([]pipeline.Task, jobs.BrainUsage, error) {
		return nil, jobs.BrainUsage{}, errors.New("529")
	}
	if _, err := Prepare(ctx, Request{Plan: "testdata/free.md", Options: llm}, broken); !errors.Is(err, pipeline.ErrNoTasks) {
		t.Fatalf("a failing brain: %v", err)
	}
}
