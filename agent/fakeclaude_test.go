package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRunResult is what one run of the fake's model mode printed and recorded.
type fakeRunResult struct {
	lines  []map[string]any
	result map[string]any
	stderr string
	exit   int
}

// fakeLogLine is one line of $FAKE_CLAUDE_LOG.
type fakeLogLine struct {
	Args    []string          `json:"args"`
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

// fakeSandbox is a workspace, a home and a config dir for runs of the fake.
type fakeSandbox struct {
	t       *testing.T
	bin     string
	dir     string
	home    string
	config  string
	logPath string
	env     []string
	hooks   int
}

// newFakeSandbox builds nothing: it gives each test its own directories around the binary built in bin.
func newFakeSandbox(t *testing.T, bin string) *fakeSandbox {
	t.Helper()
	s := &fakeSandbox{t: t, bin: filepath.Join(bin, "claude"), dir: t.TempDir(), home: t.TempDir(), config: t.TempDir()}
	s.logPath = filepath.Join(t.TempDir(), "log.jsonl")
	return s
}

// run runs the fake with a model script and arguments in the workspace.
func (s *fakeSandbox) run(model string, args ...string) fakeRunResult {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "HOME="+s.home, "CLAUDE_CONFIG_DIR="+s.config, "FAKE_CLAUDE_LOG="+s.logPath,
		"FAKE_CLAUDE_MODEL="+model, "ORCH_TASK_ID=7")
	cmd.Env = append(cmd.Env, s.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		s.t.Fatal(err)
	}
	r := fakeRunResult{stderr: stderr.String(), exit: cmd.ProcessState.ExitCode()}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			s.t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		r.lines = append(r.lines, m)
		if m["type"] == "result" {
			r.result = m
		}
	}
	return r
}

// stream runs the fake as orch does: -p, stream-json, verbose.
func (s *fakeSandbox) stream(model string, extra ...string) fakeRunResult {
	s.t.Helper()
	return s.run(model, append([]string{"-p", "--output-format", "stream-json", "--verbose"}, extra...)...)
}

// logs reads $FAKE_CLAUDE_LOG.
func (s *fakeSandbox) logs() []fakeLogLine {
	s.t.Helper()
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		s.t.Fatal(err)
	}
	var out []fakeLogLine
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l fakeLogLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// hook writes a PreToolUse hook script printing reply (or exiting with code) and returns settings JSON using it.
// The script appends its stdin to hook-input.jsonl in the sandbox.
func (s *fakeSandbox) hook(matcher, script string, extra string) string {
	s.t.Helper()
	s.hooks++
	path := filepath.Join(s.home, fmt.Sprintf("hook%d.sh", s.hooks))
	inputs := filepath.Join(s.home, "hook-input.jsonl")
	body := "#!/bin/sh\ncat >> " + inputs + "\necho >> " + inputs + "\n" + script + "\n"
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		s.t.Fatal(err)
	}
	settings := fmt.Sprintf(`{"hooks":{"PreToolUse":[{"matcher":%q,"hooks":[{"type":"command","command":%q}]}]}%s}`, matcher, path, extra)
	return settings
}

// hookInputs returns what the hook received on stdin, in order.
func (s *fakeSandbox) hookInputs() []hookInput {
	s.t.Helper()
	data, _ := os.ReadFile(filepath.Join(s.home, "hook-input.jsonl"))
	var out []hookInput
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var in hookInput
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			s.t.Fatalf("hook stdin %q: %v", line, err)
		}
		out = append(out, in)
	}
	return out
}

// fakeReply is a hook script that prints a PreToolUse decision.
func fakeReply(decision, reason, updated string) string {
	out := hookOutput{HookSpecificOutput: hookDecision{HookEventName: "PreToolUse", PermissionDecision: decision,
		PermissionDecisionReason: reason}}
	if updated != "" {
		out.HookSpecificOutput.UpdatedInput = json.RawMessage(updated)
	}
	data, _ := json.Marshal(out)
	return "printf '%s\\n' '" + string(data) + "'"
}

// fakeToolResults returns the tool_result blocks of the run, in order.
func fakeToolResults(r fakeRunResult) []map[string]any {
	var out []map[string]any
	for _, l := range r.lines {
		if l["type"] != "user" {
			continue
		}
		for _, b := range l["message"].(map[string]any)["content"].([]any) {
			out = append(out, b.(map[string]any))
		}
	}
	return out
}

// fakeDenials returns the tool names of the result's permission_denials.
func fakeDenials(r fakeRunResult) []string {
	var out []string
	for _, d := range r.result["permission_denials"].([]any) {
		out = append(out, d.(map[string]any)["tool_name"].(string))
	}
	return out
}

// fakeBash is a one-step Bash script followed by a text echoing its result.
func fakeBash(command string) string {
	cmd, _ := json.Marshal(command)
	return `{"turns":[[{"tool":"Bash","input":{"command":` + string(cmd) + `}},{"text":"got: {{last_result}}"}]]}`
}

func TestFakeClaudeModel(t *testing.T) {
	bin := buildFakeClaude(t)

	t.Run("version and usage errors", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		cmd := exec.Command(s.bin, "--version")
		cmd.Env = append(os.Environ(), "FAKE_CLAUDE_MODEL={}", "FAKE_CLAUDE_VERSION=2.1.90")
		if out, err := cmd.Output(); err != nil || string(out) != "2.1.90 (Claude Code)\n" {
			t.Errorf("--version = %q, %v", out, err)
		}
		r := s.run(`{"turns":[]}`, "-p", "--output-format", "stream-json", "hi")
		if r.exit != 1 || !strings.Contains(r.stderr, "--output-format=stream-json requires --verbose") {
			t.Errorf("stream-json without --verbose: exit %d, stderr %q", r.exit, r.stderr)
		}
		r = s.run(`{"turns":[]}`, "-p", "--frobnicate", "hi")
		if r.exit != 1 || !strings.Contains(r.stderr, "error: unknown option '--frobnicate'") {
			t.Errorf("unknown option: exit %d, stderr %q", r.exit, r.stderr)
		}
		r = s.stream(`{"turns":[]}`, "--resume", "0b7f9a52-1111-4222-8333-444455556666")
		if r.exit != 1 || !strings.Contains(r.stderr, "No conversation found with session ID: 0b7f9a52-1111-4222-8333-444455556666") {
			t.Errorf("unknown session: exit %d, stderr %q", r.exit, r.stderr)
		}
		r = s.stream(`not json`, "hi")
		if r.exit != 99 {
			t.Errorf("malformed model: exit %d, want 99", r.exit)
		}
	})

	t.Run("default mode refuses and lists the denial", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		r := s.stream(fakeBash("echo hi"), "--", "go")
		if r.exit != 0 || r.lines[0]["subtype"] != "init" || r.result == nil {
			t.Fatalf("exit %d, lines %v, stderr %s", r.exit, r.lines, r.stderr)
		}
		res := fakeToolResults(r)
		if len(res) != 1 || res[0]["is_error"] != true ||
			res[0]["content"] != "Claude requested permissions to use Bash, but you haven't granted it yet." {
			t.Errorf("tool results = %v", res)
		}
		if d := fakeDenials(r); len(d) != 1 || d[0] != "Bash" {
			t.Errorf("permission_denials = %v", d)
		}
		if l := s.logs(); len(l) != 1 || len(l[0].Ran) != 0 || l[0].Env["ORCH_TASK_ID"] != "7" || l[0].Resumed {
			t.Errorf("log = %+v", l)
		}
	})

	t.Run("allow rules, deny over allow, compound commands", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		cases := []struct {
			command, settings, want string
		}{
			{"echo hi", `{"permissions":{"allow":["Bash(echo:*)"]}}`, "got: hi"},
			{"echo hi | tr a-z A-Z", `{"permissions":{"allow":["Bash(echo *)","Bash(tr:*)"]}}`, "got: HI"},
			{"echo secret", `{"permissions":{"allow":["Bash(echo:*)"],"deny":["Bash(echo secret*)"]}}`,
				"got: Permission to use Bash with command echo secret has been denied."},
			{"echo a && touch pwned", `{"permissions":{"allow":["Bash(echo:*)"]}}`,
				"got: Claude requested permissions to use Bash, but you haven't granted it yet."},
			{"echo a; false", `{"permissions":{"allow":["Bash(echo:*)","Bash(false)"]}}`, "got: Exit code 1\na"},
		}
		for _, c := range cases {
			r := s.stream(fakeBash(c.command), "--settings", c.settings, "go")
			if r.result["result"] != c.want {
				t.Errorf("%q with %s: result %q, want %q", c.command, c.settings, r.result["result"], c.want)
			}
		}
		if _, err := os.Stat(filepath.Join(s.dir, "pwned")); err == nil {
			t.Error("a compound command with an unallowed part ran")
		}
		r := s.stream(fakeBash("echo from-cli"), "--allowedTools", "Bash(echo:*)", "Read", "--", "go")
		if r.result["result"] != "got: from-cli" {
			t.Errorf("--allowedTools: result %q", r.result["result"])
		}
	})

	t.Run("hook allow, deny, exit 2, and allow under an ask rule", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		cases := []struct {
			script, extra, want, decision string
		}{
			{fakeReply("allow", "", ""), "", "got: hooked", "allow"},
			{fakeReply("deny", "not today", ""), "", "got: not today", "deny"},
			{"echo 'blocked by policy' >&2; exit 2", "", "got: PreToolUse:Bash hook error: [", "block"},
			{fakeReply("allow", "", ""), `,"permissions":{"ask":["Bash(echo:*)"]}`,
				"got: Claude requested permissions to use Bash, but you haven't granted it yet.", "allow"},
			{"exit 1", "", "got: Claude requested permissions to use Bash, but you haven't granted it yet.", ""},
		}
		for i, c := range cases {
			r := s.stream(fakeBash("echo hooked"), "--settings", s.hook("Bash|Write", c.script, c.extra), "go")
			got, _ := r.result["result"].(string)
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("case %d: result %q, want prefix %q (stderr %s)", i, got, c.want, r.stderr)
			}
			logs := s.logs()
			if h := logs[len(logs)-1].Hooks; len(h) != 1 || h[0].Decision != c.decision {
				t.Errorf("case %d: logged hooks %+v, want decision %q", i, h, c.decision)
			}
		}
		in := s.hookInputs()
		if len(in) != 5 || in[0].HookEventName != "PreToolUse" || in[0].ToolName != "Bash" ||
			!strings.HasPrefix(in[0].ToolUseID, "toolu_01") || in[0].Cwd != s.dir || in[0].SessionID == "" {
			t.Errorf("hook stdin = %+v", in)
		}
	})

	t.Run("defer pauses, resume re-runs the hook and the call", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		target := filepath.Join(s.dir, "out", "file.txt")
		model := `{"turns":[[{"tool":"Write","input":{"file_path":"` + target + `","content":"written\n"},"id":"toolu_01DeferMe"},{"text":"after: {{last_result}}"}]]}`
		decision := filepath.Join(s.home, "decision")
		os.WriteFile(decision, []byte("defer"), 0o644)
		script := `d=$(cat ` + decision + `); printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s"}}\n' "$d"`
		settings := s.hook("", script, "")
		r := s.stream(model, "--settings", settings, "write it")
		if r.exit != 0 || r.result["stop_reason"] != "tool_deferred" || r.result["is_error"] != false || r.result["result"] != "" {
			t.Fatalf("deferred result = %v (stderr %s)", r.result, r.stderr)
		}
		du := r.result["deferred_tool_use"].(map[string]any)
		if du["id"] != "toolu_01DeferMe" || du["name"] != "Write" {
			t.Errorf("deferred_tool_use = %v", du)
		}
		if _, err := os.Stat(target); err == nil {
			t.Fatal("the deferred Write ran")
		}
		session := r.result["session_id"].(string)

		os.WriteFile(decision, []byte("allow"), 0o644)
		r = s.stream(model, "--settings", settings, "--resume", session)
		if r.exit != 0 || r.result["session_id"] != session || r.result["result"] != "after: File created successfully at: "+target {
			t.Fatalf("resumed result = %v (stderr %s)", r.result, r.stderr)
		}
		if data, err := os.ReadFile(target); err != nil || string(data) != "written\n" {
			t.Errorf("file after resume: %q, %v", data, err)
		}
		in := s.hookInputs()
		if len(in) != 2 || in[0].ToolUseID != "toolu_01DeferMe" || in[1].ToolUseID != "toolu_01DeferMe" {
			t.Errorf("hook inputs = %+v", in)
		}
		logs := s.logs()
		if len(logs) != 2 || !logs[1].Resumed || logs[1].Session != session || logs[0].Session != session ||
			len(logs[1].Ran) != 1 || logs[1].Ran[0].ID != "toolu_01DeferMe" || logs[0].Hooks[0].Decision != "defer" {
			t.Errorf("logs = %+v", logs)
		}
		r = s.stream(model, "--resume", session)
		if r.exit != 1 || !strings.Contains(r.stderr, "No deferred tool marker found") {
			t.Errorf("resume with nothing pending: exit %d, stderr %q", r.exit, r.stderr)
		}
	})

	t.Run("defer is ignored with two tool calls and before 2.1.89", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		settings := s.hook("", fakeReply("defer", "", ""), "")
		two := `{"turns":[[{"tools":[{"tool":"Bash","input":{"command":"echo a"}},{"tool":"Bash","input":{"command":"echo b"}}]},{"text":"end"}]]}`
		r := s.stream(two, "--settings", settings, "go")
		if r.result["stop_reason"] != "end_turn" || len(fakeDenials(r)) != 2 {
			t.Errorf("two calls: result %v", r.result)
		}
		s.env = []string{"FAKE_CLAUDE_VERSION=2.1.88"}
		r = s.stream(fakeBash("echo a"), "--settings", settings, "go")
		if r.result["stop_reason"] != "end_turn" || len(fakeDenials(r)) != 1 {
			t.Errorf("2.1.88: result %v", r.result)
		}
	})

	t.Run("AskUserQuestion answered by a hook", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		questions := `{"questions":[{"question":"Which approach?","header":"Approach","options":[{"label":"A"},{"label":"B"}],"multiSelect":false},{"question":"Which extras?","header":"Extras","options":[{"label":"X"},{"label":"Y"}],"multiSelect":true}]}`
		model := `{"turns":[[{"tool":"AskUserQuestion","input":` + questions + `},{"text":"{{last_result}}"}]]}`
		updated := strings.TrimSuffix(questions, "}") + `,"answers":{"Which approach?":"A","Which extras?":"X, Y"}}`
		r := s.stream(model, "--settings", s.hook("AskUserQuestion", fakeReply("allow", "", updated), ""), "ask")
		want := `User has answered your questions: "Which approach?"="A", "Which extras?"="X, Y". You can now continue with the user's answers in mind.`
		if r.result["result"] != want {
			t.Errorf("result %q, want %q", r.result["result"], want)
		}
		r = s.stream(model, "--settings", s.hook("AskUserQuestion", fakeReply("allow", "", ""), ""), "ask")
		if d := fakeDenials(r); len(d) != 1 || d[0] != "AskUserQuestion" {
			t.Errorf("allow without answers: denials %v", d)
		}
		s.env = []string{"FAKE_CLAUDE_VERSION=2.1.187"}
		r = s.stream(model, "ask")
		tools := fmt.Sprint(r.lines[0]["tools"])
		if strings.Contains(tools, "AskUserQuestion") ||
			r.result["result"] != "<tool_use_error>Error: No such tool available: AskUserQuestion</tool_use_error>" {
			t.Errorf("2.1.187: tools %s, result %q", tools, r.result["result"])
		}
	})

	t.Run("permission prompt tool over MCP", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		server := filepath.Join(s.home, "server.sh")
		os.WriteFile(server, []byte(`#!/bin/sh
read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"p","version":"1"}}}'
read l
read l; echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"approve","inputSchema":{"type":"object"}}]}}'
read l; echo "$l" > `+filepath.Join(s.home, "call.json")+`
echo '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"echo approved\"}}"}]}}'
read l
`), 0o755)
		mcp := `{"mcpServers":{"perm":{"command":"` + server + `"}}}`
		r := s.stream(fakeBash("echo asked"), "--mcp-config", mcp, "--permission-prompt-tool", "mcp__perm__approve", "--", "go")
		if r.result["result"] != "got: approved" {
			t.Errorf("result %v (stderr %s)", r.result, r.stderr)
		}
		call, _ := os.ReadFile(filepath.Join(s.home, "call.json"))
		if !strings.Contains(string(call), `"tool_name":"Bash"`) || !strings.Contains(string(call), `"tool_use_id":"toolu_01`) {
			t.Errorf("tools/call = %s", call)
		}
	})

	t.Run("read before edit, in acceptEdits", func(t *testing.T) {
		s := newFakeSandbox(t, bin)
		file := filepath.Join(s.dir, "notes.txt")
		os.WriteFile(file, []byte("one\ntwo\ntwo\n"), 0o644)
		edit := func(old, new string) string {
			return `{"tool":"Edit","input":{"file_path":"` + file + `","old_string":"` + old + `","new_string":"` + new + `"}}`
		}
		model := `{"turns":[[` + edit("one", "uno") + `,{"tool":"Read","input":{"file_path":"` + file + `"}},` +
			edit("two", "dos") + `,` + edit("zzz", "y") + `,` + edit("one", "uno") + `,{"text":"ok"}]]}`
		r := s.stream(model, "--permission-mode", "acceptEdits", "edit")
		res := fakeToolResults(r)
		wants := []string{
			"<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
			"     1\tone\n     2\ttwo\n     3\ttwo\n",
			"<tool_use_error>Found 2 matches of the string to replace, but replace_all is false.",
			"<tool_use_error>String to replace not found in file.\nString: zzz</tool_use_error>",
			"The file " + file + " has been updated successfully.",
		}
		if len(res) != len(wants) {
			t.Fatalf("tool results = %v", res)
		}
		for i, w := range wants {
			if !strings.HasPrefix(res[i]["content"].(string), w) {
				t.Errorf("result %d = %q, want prefix %q", i, res[i]["content"], w)
			}
		}
		if data, _ := os.ReadFile(file); string(data) != "uno\ntwo\ntwo\n" {
			t.Errorf("file = %q", data)
		}
	})
}
