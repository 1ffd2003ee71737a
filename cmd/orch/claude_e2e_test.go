package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/bot/slackfake"
)

// The claude agent under orch's permission policy, end to end, against the fake claude's model mode: a CLI that
// keeps Claude Code's permission rules, settings, PreToolUse hooks, `defer` and `--resume` as documented (its header
// cites the documentation and versions), driven by a scripted model instead of an LLM.

var (
	fakeClaudeOnce sync.Once
	fakeClaudeDir  string
	fakeClaudeErr  error
)

// fakeClaudeBin builds the fake claude, static (it runs in the Docker sandbox's busybox image too), once.
func fakeClaudeBin(t *testing.T) string {
	t.Helper()
	fakeClaudeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "orch-fake-claude")
		if err != nil {
			fakeClaudeErr = err
			return
		}
		fakeClaudeDir = dir
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "claude"), "../../agent/testdata/fakeclaude")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fakeClaudeErr = &buildError{err, string(out)}
		}
	})
	if fakeClaudeErr != nil {
		t.Fatalf("building the fake claude: %v", fakeClaudeErr)
	}
	return filepath.Join(fakeClaudeDir, "claude")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// claudeModel is a script for the fake claude's model: per user prompt of a session, the assistant messages in order.
type claudeModel struct {
	Turns [][]claudeStep `json:"turns"`
}

// claudeStep is one assistant message: one tool call, several, or the final text.
type claudeStep struct {
	Tool  string         `json:"tool,omitempty"`
	Input map[string]any `json:"input,omitempty"`
	Tools []claudeStep   `json:"tools,omitempty"`
	Text  string         `json:"text,omitempty"`
}

// fakeClaudeEnv are the fake claude's own settings: the agent is given them on purpose, as it is given nothing of
// orch's environment beyond the allowlist.
const fakeClaudeEnv = "FAKE_CLAUDE_MODEL,FAKE_CLAUDE_LOG,FAKE_CLAUDE_VERSION,FAKE_CLAUDE_ARGS,FAKE_CLAUDE_TRANSCRIPT," +
	"FAKE_CLAUDE_STDERR,FAKE_CLAUDE_EXIT"

// claudeSetup is the environment of a process that runs the fake claude with model m: on PATH, with a home and a
// Claude config directory of its own (never the user's), and a log of every claude process.
func claudeSetup(t *testing.T, m claudeModel) (env []string, log string) {
	t.Helper()
	bin := fakeClaudeBin(t)
	model, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	log = filepath.Join(t.TempDir(), "claude.log")
	return []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"FAKE_CLAUDE_MODEL=" + string(model), "FAKE_CLAUDE_LOG=" + log, "FAKE_CLAUDE_VERSION=2.1.186",
		"ORCH_AGENT_ENV=" + fakeClaudeEnv}, log
}

// claudeProc is one claude process as the fake logs it.
type claudeProc struct {
	Args    []string          `json:"args"`
	Dir     string            `json:"dir"`
	Env     map[string]string `json:"env"`
	Session string            `json:"session"`
	Resumed bool              `json:"resumed"`
	Hooks   []struct {
		ToolUseID string `json:"tool_use_id"`
		Tool      string `json:"tool"`
		Decision  string `json:"decision"`
	} `json:"hooks"`
	Ran []struct {
		Tool string `json:"tool"`
		ID   string `json:"id"`
	} `json:"ran"`
	Exit int `json:"exit"`
}

// hookDecisions lists the hook's decisions as "tool=decision".
func (p claudeProc) hookDecisions() []string {
	var s []string
	for _, h := range p.Hooks {
		s = append(s, h.Tool+"="+h.Decision)
	}
	return s
}

func (p claudeProc) ran(tool string) bool {
	return slices.ContainsFunc(p.Ran, func(r struct {
		Tool string `json:"tool"`
		ID   string `json:"id"`
	}) bool {
		return r.Tool == tool
	})
}

// claudeLog reads the fake's log: one line per claude process that ended.
func claudeLog(t *testing.T, path string) []claudeProc {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var procs []claudeProc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p claudeProc
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("claude log: %v: %s", err, sc.Text())
		}
		procs = append(procs, p)
	}
	return procs
}

// noClaudeRunning fails if a claude process of the test with this log is alive.
func noClaudeRunning(t *testing.T, log string) {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", fakeClaudeDir+"/claude").Output()
	for _, pid := range strings.Fields(string(out)) {
		env, err := os.ReadFile("/proc/" + pid + "/environ")
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "FAKE_CLAUDE_LOG="+log) {
			t.Fatalf("a claude process (pid %s) is running while the run is parked", pid)
		}
	}
}

// claudeWorkspace is a git repository with a one-task plan and a Makefile whose test checks the task's file; origin
// is a bare repository it pushes to.
func claudeWorkspace(t *testing.T) (dir, origin string) {
	t.Helper()
	dir = t.TempDir()
	origin = filepath.Join(t.TempDir(), "origin.git")
	gitT(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "plan.md", "# Greeting\n\n## Task 1: Write the greeting\nWrite hello.txt and run the tests.\n")
	writeFile(t, dir, "Makefile", "test:\n\tgrep -q hello hello.txt && echo 'ok: 1 test passed'\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	gitT(t, t.TempDir(), "clone", "-q", "--bare", dir, origin)
	gitT(t, dir, "remote", "add", "origin", origin)
	return dir, origin
}

// writeAndTest is a model that writes hello.txt in its working directory and runs the tests.
var writeAndTest = claudeModel{Turns: [][]claudeStep{{
	{Tool: "Write", Input: map[string]any{"file_path": "{{cwd}}/hello.txt", "content": "hello\n"}},
	{Tool: "Bash", Input: map[string]any{"command": "make test", "description": "Run the tests"}},
	{Text: "Wrote hello.txt and ran the tests: {{last_result}}. All tests pass."},
}}}

// The default policy of the local sandbox lets the agent write in its worktree and run the tests, with no setup:
// the task completes and its commit holds the file. Without orch's policy the fake claude, like Claude Code in -p,
// would deny the Write and the Bash call.
func TestClaudeWorksUnderTheLocalDefaults(t *testing.T) {
	t.Parallel()
	dir, _ := claudeWorkspace(t)
	env, log := claudeSetup(t, writeAndTest)
	r := orchEnv(t, dir, env, nil, "run", "--agent", "claude", "--brain", "heuristic", "plan.md")
	must(t, r, 0, "Permissions: local defaults", "Task 1: COMPLETED", "Write: ", "Bash: make test")
	id := runID(t, r)
	if got := gitT(t, dir, "show", "orch/"+id+":hello.txt"); got != "hello" {
		t.Fatalf("the branch holds hello.txt = %q", got)
	}
	procs := claudeLog(t, log)
	if len(procs) != 1 || !procs[0].ran("Write") || !procs[0].ran("Bash") {
		t.Fatalf("claude processes: %+v", procs)
	}
	if got := procs[0].hookDecisions(); !slices.Equal(got, []string{"Write=allow", "Bash=allow"}) {
		t.Fatalf("the hook decided %v", got)
	}
	if procs[0].Env["ORCH_PERMISSIONS"] == "" {
		t.Fatal("the hook's state did not reach claude's environment")
	}
}

// pushModel pushes with --force, which the defaults ask a person about, and reports what came of it.
var pushModel = claudeModel{Turns: [][]claudeStep{{
	{Tool: "Bash", Input: map[string]any{"command": "git push --force origin HEAD:refs/heads/agent", "description": "Publish the work"}},
	{Text: "The push ended: {{last_result}}. Task complete."},
}}}

// A `git push --force` parks the run on an approval with no process left; allowing it from the terminal resumes the
// same Claude session, whose hook then lets the push run. Denying it with a reason resumes the session too, and the
// agent receives the reason.
func TestClaudeApprovalFromTheTerminal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		resolve []string
		hook    string
		pushed  bool
	}{
		{"allow once", []string{"--choose", "A"}, "Bash=allow", true},
		{"deny with a reason", []string{"--answer", "no force pushes on this repository"}, "Bash=deny", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, origin := claudeWorkspace(t)
			env, log := claudeSetup(t, pushModel)
			r := orchEnv(t, dir, env, nil, "run", "--agent", "claude", "--brain", "heuristic", "plan.md")
			must(t, r, 3, "is parked", "git push --force origin HEAD:refs/heads/agent", "A) Allow once",
				"B) Allow for this run", "C) Deny")
			id := runID(t, r)
			noClaudeRunning(t, log)
			procs := claudeLog(t, log)
			if len(procs) != 1 || procs[0].hookDecisions()[0] != "Bash=defer" || procs[0].ran("Bash") {
				t.Fatalf("before the answer: %+v", procs)
			}
			show := orchEnv(t, dir, env, nil, "escalation", "show", id, "--json")
			must(t, show, 0, `"approval"`)

			must(t, orchEnv(t, dir, env, nil, append([]string{"escalation", "resolve", id}, tt.resolve...)...), 0, "resolved")
			done := orchEnv(t, dir, env, nil, "resume", id)
			must(t, done, 0, "Task 1: COMPLETED")
			procs = claudeLog(t, log)
			if len(procs) != 2 {
				t.Fatalf("claude processes: %+v", procs)
			}
			second := procs[1]
			if !second.Resumed || second.Session != procs[0].Session || !slices.Contains(second.Args, "--resume") {
				t.Fatalf("the answer did not resume the session %s: %+v", procs[0].Session, second)
			}
			if got := second.hookDecisions(); len(got) == 0 || got[0] != tt.hook || second.Hooks[0].ToolUseID != procs[0].Hooks[0].ToolUseID {
				t.Fatalf("the resumed session's hook decided %+v, want %s for %s", second.Hooks, tt.hook, procs[0].Hooks[0].ToolUseID)
			}
			_, err := exec.Command("git", "--git-dir", origin, "rev-parse", "--verify", "-q", "refs/heads/agent").Output()
			if pushed := err == nil; pushed != tt.pushed {
				t.Fatalf("pushed = %v, want %v", pushed, tt.pushed)
			}
			transcript := sessionText(t, env, procs[0].Session)
			if !tt.pushed && !strings.Contains(transcript, "no force pushes on this repository") {
				t.Fatalf("the agent did not receive the reason:\n%s", transcript)
			}
			audit := orchEnv(t, dir, env, nil, "escalation", "log", id, "--json")
			must(t, audit, 0, `"trigger":"approval"`, `"action":"resolved"`)
		})
	}
}

// sessionText is the stored transcript of a fake claude session.
func sessionText(t *testing.T, env []string, session string) string {
	t.Helper()
	var cfg string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "CLAUDE_CONFIG_DIR="); ok {
			cfg = v
		}
	}
	matches, _ := filepath.Glob(filepath.Join(cfg, "projects", "*", session+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("session %s: %v", session, matches)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// askModel asks its question with Claude Code's own tool, three options, and says what it was told.
var askModel = claudeModel{Turns: [][]claudeStep{{
	{Tool: "AskUserQuestion", Input: map[string]any{"questions": []any{map[string]any{
		"question": "Which cache backend should the service use?", "header": "Cache", "multiSelect": false,
		"options": []any{
			map[string]any{"label": "Redis (Recommended)", "description": "Shared by every replica"},
			map[string]any{"label": "In-process LRU", "description": "Fast, one per replica"},
			map[string]any{"label": "Memcached", "description": "What ops already run"},
		}}}}},
	{Text: "Understood: {{last_result}} Implemented it. All tests pass."},
}}}

// Claude's own question arrives in Slack as one button per option with the real labels; a click resumes the same
// session with that answer, and while the run waits no process and no worker is held.
func TestClaudeQuestionAsSlackButtons(t *testing.T) {
	t.Parallel()
	dir, _ := claudeWorkspace(t)
	env, log := claudeSetup(t, askModel)
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	s := startServeIn(t, dir, fake, append(env, "ORCH_AGENT=claude")...)
	code, body := s.post("/slack/commands", fake.SlashCommand("run plan.md", "U1ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(body, "Starting a run") {
		t.Fatalf("slash command: %d %s", code, body)
	}
	msgs := s.waitFor("the question", func(m []slackfake.Message) bool { _, ok := escalationMsg(m); return ok })
	q, _ := escalationMsg(msgs)
	labels := map[string]string{}
	for _, b := range slackfake.ButtonList(q) {
		labels[b.Text] = b.ActionID
	}
	// Three buttons with Claude's labels, Answer… (a form for words) and Abort.
	if len(labels) != 5 || labels["Abort"] == "" || labels["Answer…"] != "orch_answer" {
		t.Fatalf("buttons: %v", labels)
	}
	for _, want := range []string{"Redis (Recommended)", "In-process LRU", "Memcached"} {
		if labels[want] == "" {
			t.Fatalf("no button %q: %v\n%s", want, labels, q.Blocks)
		}
	}
	if !strings.Contains(q.Text+string(q.Blocks), "Which cache backend should the service use?") {
		t.Fatalf("the question is not the agent's: %s", q.Blocks)
	}
	parkedHoldsNothing(t, s, log)

	action := labels["In-process LRU"]
	value := slackfake.Buttons(q)[action]
	if code, _ := s.post("/slack/interactions", fake.Click(q, "U1ALICE", action, value), "application/x-www-form-urlencoded"); code != 200 {
		t.Fatalf("click: %d", code)
	}
	s.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
	procs := claudeLog(t, log)
	if len(procs) != 2 || procs[1].Session != procs[0].Session || !procs[1].Resumed {
		t.Fatalf("claude processes: %+v", procs)
	}
	transcript := sessionText(t, env, procs[0].Session)
	if !strings.Contains(transcript, `\"Which cache backend should the service use?\"=\"In-process LRU\"`) {
		t.Fatalf("the agent did not receive the answer:\n%s", transcript)
	}
}

// An approval in Slack: buttons A, B, C showing the command. A click on "Allow once" resumes the session and the push
// runs; a click on "Deny", or a reply in the thread, resumes it with the call denied (the reply's text is the reason
// the agent reads).
func TestClaudeApprovalFromSlack(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, button, reply, hook string
	}{
		{"allow once", "Allow once", "", "Bash=allow"},
		{"deny", "Deny", "", "Bash=deny"},
		{"thread reply", "", "not from here: open a pull request instead", "Bash=deny"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, origin := claudeWorkspace(t)
			env, log := claudeSetup(t, pushModel)
			fake := slackfake.New()
			t.Cleanup(fake.Close)
			s := startServeIn(t, dir, fake, append(env, "ORCH_AGENT=claude")...)
			code, _ := s.post("/slack/commands", fake.SlashCommand("run plan.md", "U1ALICE", "C0RUNS"), "application/x-www-form-urlencoded")
			if code != 200 {
				t.Fatalf("slash command: %d", code)
			}
			msgs := s.waitFor("the approval", func(m []slackfake.Message) bool { _, ok := escalationMsg(m); return ok })
			q, _ := escalationMsg(msgs)
			labels := map[string]string{}
			for _, b := range slackfake.ButtonList(q) {
				labels[b.Text] = b.ActionID
			}
			for _, want := range []string{"Allow once", "Allow for this run (Bash(git push:*))", "Deny"} {
				if labels[want] == "" {
					t.Fatalf("no button %q: %v\n%s", want, labels, q.Blocks)
				}
			}
			if !strings.Contains(string(q.Blocks), "git push --force origin HEAD:refs/heads/agent") {
				t.Fatalf("the approval does not show the command: %s", q.Blocks)
			}
			parkedHoldsNothing(t, s, log)
			if tt.button != "" {
				action := labels[tt.button]
				if code, _ := s.post("/slack/interactions", fake.Click(q, "U1ALICE", action, slackfake.Buttons(q)[action]), "application/x-www-form-urlencoded"); code != 200 {
					t.Fatalf("click: %d", code)
				}
			} else if code, _ := s.post("/slack/events", slackfake.ThreadReply("Ev001", "C0RUNS", q.ThreadTS, "U1ALICE", tt.reply), "application/json"); code != 200 {
				t.Fatalf("thread reply: %d", code)
			}
			s.waitFor("the final message", func(m []slackfake.Message) bool { return finalMsg(m, "completed") })
			procs := claudeLog(t, log)
			if len(procs) != 2 || procs[1].Session != procs[0].Session || len(procs[1].Hooks) == 0 || procs[1].hookDecisions()[0] != tt.hook {
				t.Fatalf("claude processes: %+v", procs)
			}
			err := exec.Command("git", "--git-dir", origin, "rev-parse", "--verify", "-q", "refs/heads/agent").Run()
			if pushed := err == nil; pushed != (tt.hook == "Bash=allow") {
				t.Fatalf("pushed = %v after %s", pushed, tt.name)
			}
			if tt.reply != "" && !strings.Contains(sessionText(t, env, procs[0].Session), tt.reply) {
				t.Fatal("the agent did not receive the reply as the reason")
			}
		})
	}
}

// parkedHoldsNothing checks that a run waiting for a person holds no claude process and no task on the step queue.
func parkedHoldsNothing(t *testing.T, s *slackServer, log string) {
	t.Helper()
	var metrics string
	waitFor(t, func() bool {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			return false
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(data)
		return strings.Contains(metrics, "orchestrator_parked_runs 1") &&
			strings.Contains(metrics, `asynq_queue_size{queue="orch-steps"} 0`)
	}, s.out)
	noClaudeRunning(t, log)
}

// The Docker sandbox's defaults let the agent do anything inside its container: the fake claude, in the test's
// busybox image, writes and runs the tests, orch's hook (the static orch mounted into the container) allows both, and
// the task's commit holds the file. The image is the sandbox image's layout (deploy/sandbox/Dockerfile): HOME and
// CLAUDE_CONFIG_DIR in a volume any uid can write.
func TestClaudeWorksUnderTheDockerDefaults(t *testing.T) {
	t.Parallel()
	base, bin := dockerSetup(t)
	dir, _ := claudeWorkspace(t)
	model, _ := json.Marshal(claudeModel{Turns: [][]claudeStep{{
		{Tool: "Write", Input: map[string]any{"file_path": "{{cwd}}/hello.txt", "content": "hello\n"}},
		{Tool: "Bash", Input: map[string]any{"command": "grep -q hello hello.txt && echo 'ok: 1 test passed'"}},
		{Text: "Wrote hello.txt and ran the tests: {{last_result}}. All tests pass."},
	}}})
	ctx := t.TempDir()
	data, err := os.ReadFile(fakeClaudeBin(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ctx, "claude"), data, 0o755)
	os.WriteFile(filepath.Join(ctx, "model.json"), model, 0o644)
	os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte("FROM "+base+"\nCOPY claude /bin/claude\nCOPY model.json /etc/fake-claude-model.json\n"+
		"RUN mkdir -p /home/agent/.claude && chmod 1777 /home/agent /home/agent/.claude\n"+
		"ENV HOME=/home/agent CLAUDE_CONFIG_DIR=/home/agent/.claude FAKE_CLAUDE_VERSION=2.1.186 "+
		"FAKE_CLAUDE_MODEL=@/etc/fake-claude-model.json\nVOLUME /home/agent\n"), 0o644)
	image := "orch-cmd-test-claude:" + strings.ToLower(filepath.Base(ctx))
	if out, err := exec.Command("docker", "build", "-q", "-t", image, ctx).CombinedOutput(); err != nil {
		t.Fatalf("building the claude image: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", image).Run() })

	cmd := exec.Command(bin, "run", "--sandbox", "docker", "--image", image, "--agent", "claude", "--brain", "heuristic", "plan.md")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ORCH_REDIS_URL=", "ANTHROPIC_API_KEY=", "ORCH_SANDBOX=", "ORCH_GIT_PUSH=")
	out, _ := cmd.CombinedOutput()
	r := result{stdout: string(out), code: cmd.ProcessState.ExitCode()}
	must(t, r, 0, "Permissions: docker defaults", "Task 1: COMPLETED")
	id := runID(t, r)
	if got := gitT(t, dir, "show", "orch/"+id+":hello.txt"); got != "hello" {
		t.Fatalf("the branch holds hello.txt = %q", got)
	}
	// The container sees nothing of the host to leave a log in: the hook's allowing both calls shows in the file
	// written and in the test's output, which the agent reports.
	if !strings.Contains(r.stdout, "ok: 1 test passed") {
		t.Fatalf("the Bash call's output is not in what the agent said:\n%s", r.stdout)
	}
	if left := orchContainers(t, id); left != "" {
		t.Fatalf("containers left after the run: %s", left)
	}
}

// `orch health` says which Claude Code is installed and what that means for approvals and questions, and which policy
// is in force.
func TestHealthNamesClaudesVersion(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	env, _ := claudeSetup(t, claudeModel{})
	for version, want := range map[string]string{
		"2.1.63":  "2.1.63 (Claude Code): older than 2.1.89, so a tool call that needs approval is refused first",
		"2.1.186": "2.1.186 (Claude Code): tool calls that need approval wait for a person; Claude's own questions (AskUserQuestion) reach the hook\n",
		"2.1.240": "offers AskUserQuestion in -p only with a permission prompt tool: orch gives its own (mcp__orch__approve",
	} {
		r := orchEnv(t, dir, append(env, "FAKE_CLAUDE_VERSION="+version), nil, "health", "--agent", "claude", "--sandbox", "local")
		if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "local defaults: ask by default") {
			t.Errorf("claude %s: health lacks %q:\n%s", version, want, r)
		}
		// No orch-hook stands beside the orch under test: health says the hook is orch's own binary, and why.
		if !strings.Contains(r.stdout, hookCommand+` (no orch-hook of protocol "`+agent.HookProtocol+`" beside orch`) {
			t.Errorf("health does not name the hook:\n%s", r)
		}
	}
}

// On Claude Code 2.1.187 and later, `-p` offers AskUserQuestion only with a permission prompt tool: orch gives its
// own, so Claude's question still reaches a person with its own labels, and the answer reaches Claude in the same
// session. Without the tool the question would not be offered at all (the fake says "No such tool available").
func TestClaudeQuestionOnCurrentCLIs(t *testing.T) {
	t.Parallel()
	dir, _ := claudeWorkspace(t)
	env, log := claudeSetup(t, askModel)
	env = append(env, "FAKE_CLAUDE_VERSION=2.1.240")
	r := orchEnv(t, dir, env, nil, "run", "--agent", "claude", "--brain", "heuristic", "plan.md")
	must(t, r, 3, "is parked", "Which cache backend should the service use?", "Redis (Recommended)", "In-process LRU")
	id := runID(t, r)
	procs := claudeLog(t, log)
	if len(procs) != 1 || !slices.Contains(procs[0].Args, "--permission-prompt-tool") ||
		!slices.Contains(procs[0].Args, agent.PromptTool) || procs[0].hookDecisions()[0] != "AskUserQuestion=defer" {
		t.Fatalf("the first claude process: %+v", procs)
	}
	show := orchEnv(t, dir, env, nil, "escalation", "show", id, "--json")
	must(t, show, 0, "In-process LRU")
	var key string
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, rest, ok := strings.Cut(strings.TrimSpace(line), ") "); ok && strings.HasPrefix(rest, "In-process LRU") {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("no option for In-process LRU in:\n%s", r.stdout)
	}
	must(t, orchEnv(t, dir, env, nil, "escalation", "resolve", id, "--choose", key), 0, "resolved")
	must(t, orchEnv(t, dir, env, nil, "resume", id), 0, "Task 1: COMPLETED")
	procs = claudeLog(t, log)
	if len(procs) != 2 || procs[1].Session != procs[0].Session || !procs[1].Resumed {
		t.Fatalf("claude processes: %+v", procs)
	}
	if transcript := sessionText(t, env, procs[0].Session); !strings.Contains(transcript, `\"Which cache backend should the service use?\"=\"In-process LRU\"`) {
		t.Fatalf("the agent did not receive the answer:\n%s", transcript)
	}
}

// A person allows `git push` for the run; the agent pushes and ends with words the brain cannot read. The question
// that follows shows the agent's words, offers to accept the work, and names the push that running the task again
// would repeat, with the rule that lets it through; accepting ends the run without running the agent again.
func TestAnApprovedPushIsNotRunAgainByAnAnswer(t *testing.T) {
	t.Parallel()
	dir, origin := claudeWorkspace(t)
	model := claudeModel{Turns: [][]claudeStep{{
		{Tool: "Bash", Input: map[string]any{"command": "git push --force origin HEAD:refs/heads/agent", "description": "Publish the work"}},
		{Text: "Pushed the branch to origin."},
	}}}
	env, log := claudeSetup(t, model)
	r := orchEnv(t, dir, env, nil, "run", "--agent", "claude", "--brain", "heuristic", "plan.md")
	must(t, r, 3, "is parked", "B) Allow for this run")
	id := runID(t, r)
	must(t, orchEnv(t, dir, env, nil, "escalation", "resolve", id, "--choose", "B"), 0, "resolved")
	asked := orchEnv(t, dir, env, nil, "resume", id)
	must(t, asked, 3, "cannot tell whether task 1 is done", "> Pushed the branch to origin.",
		"may run again what a person let through", "git push --force origin HEAD:refs/heads/agent",
		"allowed for this run: Bash(git push:*)", "A) Accept as completed")
	if _, err := exec.Command("git", "--git-dir", origin, "rev-parse", "--verify", "-q", "refs/heads/agent").Output(); err != nil {
		t.Fatalf("the push did not run: %v", err)
	}
	must(t, orchEnv(t, dir, env, nil, "escalation", "resolve", id, "--choose", "A"), 0, "resolved")
	must(t, orchEnv(t, dir, env, nil, "resume", id), 0, "Task 1: COMPLETED")
	if procs := claudeLog(t, log); len(procs) != 2 {
		t.Fatalf("claude ran %d times, want 2 (the session paused at the push, then resumed): %+v", len(procs), procs)
	}
}
