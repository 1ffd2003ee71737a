package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
)

// pipelineRun is `orch status RUN_ID --json` read back as the run it is.
func pipelineRun(t *testing.T, dir, id string) *jobs.Run {
	t.Helper()
	r := orch(t, dir, "", "status", id, "--json")
	must(t, r, 0)
	var run jobs.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	return &run
}

func taskOf(t *testing.T, run *jobs.Run, id string) *jobs.Task {
	t.Helper()
	task := run.Task(id)
	if task == nil {
		t.Fatalf("run %s has no task %s", run.ID, id)
	}
	return task
}

// The stage 4 manual tests 1 and 2: the gate stops the run with its choices; R loops through revise and back to the
// gate; A applies the plan and finishes.
func TestPipelineHumanGateReviseThenApprove(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "R\nA\n", "run", "--agent", "sim", "examples/pipelines/human_gate.dot")
	must(t, r, 0, "[?] Review the plan\n  [A] Approve\n  [R] Revise\n", "Select: ", "Gate review_gate: [R] Revise → revise",
		"Gate review_gate: [A] Approve → apply", "completed")
	if strings.Index(r.stdout, "Task revise: COMPLETED") > strings.Index(r.stdout, "Task apply: Apply") {
		t.Fatalf("apply ran before revise:\n%s", r.stdout)
	}
	run := pipelineRun(t, dir, runID(t, r))
	if g := taskOf(t, run, "review_gate"); g.Visits != 2 || g.Status != jobs.TaskCompleted {
		t.Fatalf("review_gate: %d visits, %s", g.Visits, g.Status)
	}
	for _, id := range []string{"do_work", "revise", "apply"} {
		if task := taskOf(t, run, id); task.Started != 1 || task.Status != jobs.TaskCompleted {
			t.Fatalf("%s: started %d, %s", id, task.Started, task.Status)
		}
	}
	cp := run.Pipeline
	if cp == nil || strings.Join(cp.Completed, " ") != "start do_work review_gate revise review_gate apply exit" ||
		cp.Context["human.gate.selected"] != "A" || cp.Context["human.gate.label"] != "Approve" {
		t.Fatalf("checkpoint: %+v", cp)
	}
	// Every decision at the gate is in the audit trail.
	log := orch(t, dir, "", "escalation", "log", run.ID)
	must(t, log, 0, "chose [R] Revise", "chose [A] Approve")
}

// --auto-approve takes the gate's first choice without reading input.
func TestPipelineAutoApprove(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "--auto-approve", "examples/pipelines/human_gate.dot")
	must(t, r, 0, "(auto-approve)", "chose [A] Approve", "completed")
	run := pipelineRun(t, dir, runID(t, r))
	if taskOf(t, run, "revise").Started != 0 || taskOf(t, run, "apply").Status != jobs.TaskCompleted {
		t.Fatal("auto-approval did not take the first choice")
	}
}

// With nobody to answer, the run parks at the gate (exit 3); the answer can come from another terminal, by key or by
// label; anything that is not a choice is refused and changes nothing.
func TestPipelineGateParksAndResolves(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/pipelines/human_gate.dot")
	must(t, r, 3, "[?] Review the plan", "--choose KEY (A, R)")
	id := runID(t, r)
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--choose", "X"), 2, `"X" is not an option`)
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--resume"), 2, "needs one of its choices (A, R)")
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--answer", "ship it"), 2, "is not a choice of the gate")
	if run := pipelineRun(t, dir, id); run.Status != jobs.RunParked || run.OpenEscalation() == nil {
		t.Fatalf("a refused answer changed the run: %s", run.Status)
	}
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--answer", "revise"), 0)
	r = orch(t, dir, "A\n", "resume", id)
	must(t, r, 0, "Task revise: COMPLETED", "chose [A] Approve", "completed")
}

// An automatic test-and-fix loop routed by a conditional node, then a human sign-off.
func TestPipelineConditionalLoop(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "S\n", "run", "--agent", "sim", "examples/pipelines/revise_loop.dot")
	must(t, r, 0, "Stage test failed → passing", "Condition passing: fail → fix", "Condition passing: success → signoff",
		"[?] Ship it?", "completed")
	run := pipelineRun(t, dir, runID(t, r))
	if test, fix := taskOf(t, run, "test"), taskOf(t, run, "fix"); test.Started != 2 || fix.Started != 1 || test.Visits != 2 {
		t.Fatalf("test started %d (visits %d), fix started %d", test.Started, test.Visits, fix.Started)
	}
}

// A pipeline that loops on its own more often than max_node_visits stops and asks, instead of burning agent runs.
func TestPipelineRunawayLoopStops(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	dot := filepath.Join(dir, "flaky.dot")
	os.WriteFile(dot, []byte(`digraph flaky {
  graph [goal="never green", max_node_visits=3]
  start [shape=Mdiamond]; exit [shape=Msquare]
  test [shape=box, prompt="run the tests", max_retries=0]
  fix  [shape=box, prompt="fix them"]
  ok   [shape=diamond]
  start -> test -> ok
  ok -> exit [condition="outcome=success"]
  ok -> fix  [condition="outcome=fail"]
  fix -> test
}`), 0o644)
	os.WriteFile(filepath.Join(dir, "flaky.sim.yaml"), []byte(`tasks:
  test:
    - output: "FAIL: TestX: boom"
      exit: 1
  fix:
    - output: "Done. Fixed it."
`), 0o644)
	r := orch(t, dir, "", "run", "--agent", "sim", dot)
	must(t, r, 3, "LOOP DETECTED: the pipeline entered test 4 times")
	run := pipelineRun(t, dir, runID(t, r))
	if n := taskOf(t, run, "test").Started; n != 3 {
		t.Fatalf("the tests ran %d times before the loop stop, want 3", n)
	}
}

// An interactive node converses until /done; stopped after two turns, it resumes at turn three with its history.
func TestPipelineInteractiveResumesMidConversation(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "Only retry POST with an idempotency key.\nAdd jitter.\n", "run", "--agent", "sim", "examples/pipelines/interactive.dot")
	must(t, r, 3, "Agent — Task collaborate: Collaborate", "GUIDANCE: Only retry POST with an idempotency key.",
		"GUIDANCE: Add jitter.", "--answer /done")
	id := runID(t, r)
	run := pipelineRun(t, dir, id)
	if c := taskOf(t, run, "collaborate"); len(c.Chat) != 5 || c.Chat[1].Role != "human" || c.Chat[3].Text != "Add jitter." {
		t.Fatalf("conversation saved: %+v", c.Chat)
	}
	r = orch(t, dir, "Make the cap configurable.\n/done\n", "resume", id)
	must(t, r, 0, "ended the conversation: /done", "Task summarize: COMPLETED", "completed")
	third := r.stdout[strings.Index(r.stdout, "reply 4"):]
	for _, want := range []string{"GUIDANCE: Only retry POST with an idempotency key.", "GUIDANCE: Add jitter.", "GUIDANCE: Make the cap configurable."} {
		if !strings.Contains(third, want) {
			t.Fatalf("turn four lacks %q: the history did not survive the stop\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "DESIGN.md")); err != nil {
		t.Fatal("the stage after the conversation did not run")
	}
}

// /reject ends the interactive node as a failure, its words the reason; with no failure route the run fails.
func TestPipelineInteractiveReject(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "/reject the cap must stay configurable\n", "run", "--agent", "sim", "examples/pipelines/interactive.dot")
	must(t, r, 1, "rejected by", "the cap must stay configurable")
	run := pipelineRun(t, dir, runID(t, r))
	if run.Status != jobs.RunFailed || taskOf(t, run, "summarize").Started != 0 || !strings.Contains(run.Reason, "the cap must stay configurable") {
		t.Fatalf("run %s (%q), summarize started %d", run.Status, run.Reason, taskOf(t, run, "summarize").Started)
	}
}

// --json carries the attractor spec's pipeline, stage, interview and checkpoint events.
func TestPipelineJSONEvents(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--json", "--agent", "sim", "--auto-approve", "examples/pipelines/human_gate.dot")
	must(t, r, 0)
	seen := map[string]int{}
	for _, e := range accEvents(t, r) {
		seen[e["type"].(string)]++
		if e["type"] == "interview_completed" && e["answer"] != "A" {
			t.Fatalf("interview_completed: %v", e)
		}
	}
	for _, typ := range []string{"pipeline_started", "stage_started", "stage_completed", "checkpoint_saved",
		"interview_started", "interview_completed", "pipeline_completed", "run_completed"} {
		if seen[typ] == 0 {
			t.Errorf("no %s event in --json: %v", typ, seen)
		}
	}
}

// Pipelines orch cannot run are refused before anything starts, with what and where.
func TestPipelineBadInput(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(src), 0o644)
		return p
	}
	cases := []struct{ name, src, want string }{
		{"undirected.dot", "graph g { a -- b }", "undirected"},
		{"two.dot", "digraph a { start [shape=Mdiamond] } digraph b { }", "graph"},
		{"nostart.dot", "digraph g { work [shape=box, prompt=\"x\"]; exit [shape=Msquare]; work -> exit }", "start"},
		{"unknown.dot", "digraph g { start [shape=Mdiamond]; exit [shape=Msquare]; start -> ghost; }", ""},
		{"parallel.dot", `digraph g { start [shape=Mdiamond]; exit [shape=Msquare]; fan [shape=component]; start -> fan -> exit }`,
			"orch cannot run these nodes: fan (parallel)"},
	}
	for _, c := range cases {
		r := orch(t, dir, "", "run", "--agent", "sim", write(c.name, c.src))
		must(t, r, 2, c.want)
	}
	must(t, orch(t, dir, "", "task", "--agent", "sim", "examples/pipelines/human_gate.dot", "review_gate"), 2, "not an agent task but a human gate")
	r := orch(t, dir, "", "task", "--agent", "sim", "examples/pipelines/human_gate.dot", "apply")
	must(t, r, 0, "Task apply: COMPLETED")
}

// The same gate from Slack: one button per choice whose text starts with [K]; a click routes; the thread tells the end.
func TestSlackPipelineGate(t *testing.T) {
	t.Parallel()
	s := startServe(t)
	s.post("/slack/commands", s.slack.SlashCommand("run examples/pipelines/human_gate.dot", "U123ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	answered := map[string]bool{}
	click := func(key string) {
		t.Helper()
		msgs := s.waitFor("a gate question", func(m []slackfake.Message) bool { _, ok := openQuestion(m, answered); return ok })
		q, _ := openQuestion(msgs, answered)
		buttons := slackfake.Buttons(q)
		value, ok := buttons["orch_choose:"+key]
		if !ok || buttons["orch_retry"] != "" || !strings.Contains(string(q.Blocks), `"[A] Approve"`) || !strings.Contains(string(q.Blocks), `"[R] Revise"`) {
			t.Fatalf("gate buttons: %v\n%s", buttons, q.Blocks)
		}
		if code, _ := s.post("/slack/interactions", s.slack.Click(q, "U123ALICE", "orch_choose:"+key, value), "application/x-www-form-urlencoded"); code != 200 {
			t.Fatalf("click: %d", code)
		}
		answered[q.TS] = true
	}
	click("R")
	click("A")
	s.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
	// The service logs JSON (its stderr is no terminal), with the run and task on every line about a run.
	var escalations, resolutions int
	for _, line := range strings.Split(s.out.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m["msg"] == "escalation" && m["task_id"] == "review_gate" && m["trigger"] == "gate" && m["level"] == "INFO":
			escalations++
		case m["msg"] == "resolution" && m["task_id"] == "review_gate" && m["by"] == "U123ALICE":
			resolutions++
		}
	}
	if escalations != 2 || resolutions != 2 {
		t.Fatalf("logged %d escalations and %d resolutions of the gate, want 2 and 2:\n%s", escalations, resolutions, s.out.String())
	}
}

// An interactive node from Slack: thread replies are the turns, the Done button ends the conversation.
func TestSlackPipelineChat(t *testing.T) {
	t.Parallel()
	s := startServe(t)
	s.post("/slack/commands", s.slack.SlashCommand("run examples/pipelines/interactive.dot", "U123ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	answered := map[string]bool{}
	msgs := s.waitFor("the agent's first reply", func(m []slackfake.Message) bool { _, ok := openQuestion(m, answered); return ok })
	root := msgs[0]
	q, _ := openQuestion(msgs, answered)
	answered[q.TS] = true
	s.post("/slack/events", slackfake.ThreadReply("Ev100", "C0RUNS", root.TS, "U123ALICE", "POST only with an idempotency key"), "application/json")
	msgs = s.waitFor("the agent's second reply", func(m []slackfake.Message) bool { _, ok := openQuestion(m, answered); return ok })
	q, _ = openQuestion(msgs, answered)
	if !strings.Contains(string(q.Blocks), "GUIDANCE: POST only with an idempotency key") {
		t.Fatalf("the thread reply did not reach the agent: %s", q.Blocks)
	}
	value, ok := slackfake.Buttons(q)["orch_choose:/done"]
	if !ok {
		t.Fatalf("no Done button: %v", slackfake.Buttons(q))
	}
	s.post("/slack/interactions", s.slack.Click(q, "U123ALICE", "orch_choose:/done", value), "application/x-www-form-urlencoded")
	s.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
}

// openQuestion is the thread message with buttons that has not been answered in the test yet.
func openQuestion(msgs []slackfake.Message, answered map[string]bool) (slackfake.Message, bool) {
	for _, m := range msgs {
		if m.ThreadTS != "" && !answered[m.TS] && len(slackfake.Buttons(m)) > 0 {
			return m, true
		}
	}
	return slackfake.Message{}, false
}

// An interactive node with claude continues the agent's own session: the next turn is `--resume SESSION` with only
// the human's message as the prompt.
func TestClaudeInteractiveResumesSession(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "claude"), "../../agent/testdata/fakeclaude")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fake claude: %v\n%s", err, out)
	}
	transcript, _ := filepath.Abs("../../agent/testdata/claude/02_stream_claude-2.1.63.jsonl")
	argsFile := filepath.Join(t.TempDir(), "args.json")
	dot := filepath.Join(dir, "talk.dot")
	os.WriteFile(dot, []byte(`digraph talk {
  start [shape=Mdiamond]; exit [shape=Msquare]
  talk [shape=box, prompt="Help me name the package", "agent.mode"="interactive"]
  start -> talk -> exit
}`), 0o644)
	r := orchEnv(t, dir, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ORCH_AGENT_ENV=" + fakeClaudeEnv, "FAKE_CLAUDE_ARGS=" + argsFile, "FAKE_CLAUDE_TRANSCRIPT=" + transcript},
		strings.NewReader("Call it retry.\n/done\n"),
		"run", "--agent", "claude", "--brain", "heuristic", dot)
	must(t, r, 0, "ended the conversation: /done", "completed")
	var inv struct {
		Args []string `json:"args"`
	}
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(data, &inv)
	session := taskOf(t, pipelineRun(t, dir, runID(t, r)), "talk").SessionID
	if session == "" || !strings.Contains(strings.Join(inv.Args, " "), "--resume "+session) || inv.Args[len(inv.Args)-1] != "Call it retry." {
		t.Fatalf("the second turn was not the same session with the human's message: %q", inv.Args)
	}
}
