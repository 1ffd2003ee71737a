package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func bash(cmd string) Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return Call{Tool: "Bash", Input: in}
}

func file(tool, path string) Call {
	in, _ := json.Marshal(map[string]string{"file_path": path, "content": "x"})
	return Call{Tool: tool, Input: in}
}

func TestPolicyDecide(t *testing.T) {
	const ws, home = "/w/repo", "/home/u"
	docker, local := DockerPolicy(), LocalPolicy()
	custom := Policy{Default: Allow, Deny: []string{"Bash(rm -rf *)", "Read(**/.env)"}, Ask: []string{"Bash(npm run deploy *)"},
		Allow: []string{"Edit(/etc/orch/**)"}}
	tests := []struct {
		name     string
		p        Policy
		call     Call
		approved []string
		want     Decision
		rule     string
	}{
		{"docker: a build runs", docker, bash("go build ./..."), nil, Allow, ""},
		{"docker: git push asks", docker, bash("git push --force origin main"), nil, Ask, "Bash(git push:*)"},
		{"docker: bare git push asks", docker, bash("git push"), nil, Ask, "Bash(git push:*)"},
		{"docker: git pushx is another command", docker, bash("git pushx"), nil, Allow, ""},
		{"docker: a push hidden in a compound command asks", docker, bash("go test ./... && git push origin HEAD"), nil, Ask, "Bash(git push:*)"},
		{"docker: a push after a pipe asks", docker, bash("echo y | git push"), nil, Ask, "Bash(git push:*)"},
		{"docker: quoted operators are not operators", docker, bash(`echo "a && git push"`), nil, Allow, ""},
		{"docker: approved for the run", docker, bash("git push origin x"), []string{"Bash(git push:*)"}, Allow, "Bash(git push:*)"},
		{"docker: reading ssh keys asks", docker, file("Read", home+"/.ssh/id_ed25519"), nil, Ask, "Read(~/.ssh/**)"},
		{"docker: an edit in the workspace runs", docker, file("Write", ws+"/src/a.go"), nil, Allow, ""},
		{"docker: an edit outside the workspace asks", docker, file("Write", "/etc/passwd"), nil, Ask, ""},
		{"docker: an edit in /tmp runs", docker, file("Edit", "/tmp/scratch.txt"), nil, Allow, ""},
		{"docker: rm outside the workspace asks", docker, bash("rm -rf /var/lib/thing"), nil, Ask, ""},
		{"docker: rm with .. out of the workspace asks", docker, bash("rm -r ../other"), nil, Ask, ""},
		{"docker: rm inside the workspace runs", docker, bash("rm -rf build"), nil, Allow, ""},
		{"local: tests run", local, bash("go test -race ./..."), nil, Allow, "Bash(go test:*)"},
		{"local: an edit in the workspace runs", local, file("Edit", ws+"/x/y.go"), nil, Allow, "Edit(./**)"},
		{"local: curl asks by default", local, bash("curl https://example.com"), nil, Ask, ""},
		{"local: one unknown part makes the whole ask", local, bash("go test ./... ; curl x"), nil, Ask, ""},
		{"local: ls and cat run", local, bash("ls -la && cat go.mod"), nil, Allow, "Bash(ls:*)"},
		{"custom: deny beats everything", custom, bash("rm -rf /"), []string{"Bash"}, Deny, "Bash(rm -rf *)"},
		{"custom: a bare name matches at any depth", custom, file("Read", ws+"/a/b/.env"), nil, Deny, "Read(**/.env)"},
		{"custom: an explicit allow rule lets an outside edit run", custom, file("Write", "/etc/orch/x.yaml"), nil, Allow, "Edit(/etc/orch/**)"},
		{"custom: a glob in the middle", custom, bash("npm run deploy prod"), nil, Ask, "Bash(npm run deploy *)"},
		{"custom: a word boundary", custom, bash("npm run deployer"), nil, Allow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.p.Name == "" {
				tt.p.Name = "test"
			}
			// Custom policies anchor "/" rules at the filesystem root for this test.
			root := ws
			if strings.HasPrefix(tt.name, "custom") {
				root = "/"
			}
			v := tt.p.Decide(tt.call, tt.approved, ws, root, home)
			if v.Decision != tt.want || (tt.rule != "" && v.Rule != tt.rule) {
				t.Errorf("Decide = %+v, want %s by %q", v, tt.want, tt.rule)
			}
		})
	}
}

func TestParseRule(t *testing.T) {
	for _, bad := range []string{"", "Bash(", "Bash()", "(x)", "Bash(git push", "git push", "Bash(x) y"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) = nil error", bad)
		}
	}
	for _, good := range []string{"Bash", "Bash(git push:*)", "Edit(src/**)", "WebFetch(domain:example.com)", "mcp__github", "Bash(*)"} {
		if _, err := ParseRule(good); err != nil {
			t.Errorf("ParseRule(%q): %v", good, err)
		}
	}
	if err := (Policy{Default: "maybe"}).Validate(); err == nil || !strings.Contains(err.Error(), "allow, ask or deny") {
		t.Errorf("a bad default: %v", err)
	}
	if err := (Policy{Default: Ask, Deny: []string{"Bash(rm"}}).Validate(); err == nil || !strings.Contains(err.Error(), "deny") {
		t.Errorf("a bad deny rule: %v", err)
	}
}

func TestRuleFor(t *testing.T) {
	p := LocalPolicy()
	tests := []struct {
		call Call
		want string
	}{
		{bash("git push --force origin main"), "Bash(git push:*)"},
		{bash("curl -fsSL https://x"), "Bash(curl:*)"},
		{file("Write", "/etc/app/conf.yaml"), "Edit(//etc/app/**)"},
		{Call{Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://docs.example.com/a"}`)}, "WebFetch(domain:docs.example.com)"},
	}
	for _, tt := range tests {
		v := p.Decide(tt.call, nil, "/w", "/w", "/home/u")
		if got := RuleFor(tt.call, v); got != tt.want {
			t.Errorf("RuleFor(%s) = %q, want %q", tt.call.Describe(), got, tt.want)
		}
		// What it allows, allows the call.
		if v2 := p.Decide(tt.call, []string{RuleFor(tt.call, v)}, "/w", "/w", "/home/u"); v2.Decision != Allow {
			t.Errorf("%s approved by its own rule: %+v", tt.call.Describe(), v2)
		}
	}
}

func hookRun(t *testing.T, st HookState, call string) (map[string]any, error) {
	t.Helper()
	state, _ := st.Encode()
	var out bytes.Buffer
	if err := RunHook(strings.NewReader(call), &out, string(state), "/home/u"); err != nil {
		return nil, err
	}
	var got struct {
		H map[string]any `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("hook output %q: %v", out.String(), err)
	}
	if got.H["hookEventName"] != "PreToolUse" {
		t.Errorf("hookEventName = %v", got.H["hookEventName"])
	}
	return got.H, nil
}

func TestHookDecisions(t *testing.T) {
	push := `{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"git push origin main"}}`
	ask := `{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"AskUserQuestion","tool_use_id":"toolu_2","tool_input":{"questions":[{"question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}}`
	base := HookState{Policy: DockerPolicy(), Defer: true, Root: "/w"}
	tests := []struct {
		name   string
		st     func(HookState) HookState
		call   string
		want   string
		reason string
	}{
		{"an ask rule defers", nil, push, "defer", ""},
		{"a build is allowed", nil, strings.Replace(push, "git push origin main", "make test", 1), "allow", ""},
		{"a question defers", nil, ask, "defer", ""},
		{"an old CLI is refused with the marker", func(s HookState) HookState { s.Defer = false; return s }, push, "deny", ApprovalMarker},
		{"a person allowed the call", func(s HookState) HookState {
			s.Decisions = []HookDecision{{ToolUseID: "toolu_1", Tool: "Bash", Allow: true}}
			return s
		}, push, "allow", ""},
		{"a person denied the call, with a reason", func(s HookState) HookState {
			s.Decisions = []HookDecision{{ToolUseID: "toolu_1", Tool: "Bash", Message: "not on Fridays"}}
			return s
		}, push, "deny", "not on Fridays"},
		{"the same call again in a new turn is found by its input", func(s HookState) HookState {
			s.Decisions = []HookDecision{{ToolUseID: "toolu_old", Tool: "Bash", Input: json.RawMessage(`{ "command" : "git push origin main" }`), Allow: true}}
			return s
		}, push, "allow", ""},
		{"approved for the run", func(s HookState) HookState { s.Approved = []string{"Bash(git push:*)"}; return s }, push, "allow", ""},
		{"a deny rule", func(s HookState) HookState { s.Policy.Deny = []string{"Bash(git push:*)"}; return s }, push, "deny", "Bash(git push:*)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := base
			if tt.st != nil {
				st = tt.st(base)
			}
			h, err := hookRun(t, st, tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if h["permissionDecision"] != tt.want {
				t.Errorf("decision = %v, want %s (%v)", h["permissionDecision"], tt.want, h)
			}
			if r, _ := h["permissionDecisionReason"].(string); tt.reason != "" && !strings.Contains(r, tt.reason) {
				t.Errorf("reason = %q, want it to say %q", r, tt.reason)
			}
		})
	}
	t.Run("the answers go back as the tool's input", func(t *testing.T) {
		st := base
		st.Decisions = []HookDecision{{ToolUseID: "toolu_2", Tool: "AskUserQuestion", Allow: true,
			UpdatedInput: json.RawMessage(`{"questions":[],"answers":{"Which?":"B"}}`)}}
		h, err := hookRun(t, st, ask)
		if err != nil {
			t.Fatal(err)
		}
		if h["permissionDecision"] != "allow" || h["updatedInput"].(map[string]any)["answers"].(map[string]any)["Which?"] != "B" {
			t.Errorf("got %v", h)
		}
	})
	t.Run("a hook that cannot decide blocks", func(t *testing.T) {
		for _, c := range []struct{ state, call string }{{"", push}, {"{", push},
			{`{"defer":true,"protocol":"` + HookProtocol + `"}`, "not json"}, {`{"protocol":"` + HookProtocol + `"}`, `{"tool_input":{}}`},
			// A state written by an orch of another release: its rules are not read by this hook's.
			{`{"policy":{"default":"allow"},"protocol":"orch-hook 0"}`, push}, {`{"policy":{"default":"allow"}}`, push}} {
			if err := RunHook(strings.NewReader(c.call), &bytes.Buffer{}, c.state, "/h"); err == nil || !strings.Contains(err.Error(), "blocked") {
				t.Errorf("state %q call %q: err = %v", c.state, c.call, err)
			}
		}
	})
}

func TestClaudeCommandCarriesThePolicy(t *testing.T) {
	st := &HookState{Policy: Policy{Default: Allow, Ask: []string{"Bash(git push:*)"}, Deny: []string{"Bash(rm -rf /)"}}, Defer: true}
	with := NewClaude(ClaudeConfig{Hook: "'/opt/orch bin/orch' claude-hook"})
	cmd, err := with.Command(Request{Prompt: "go", Permissions: st})
	if err != nil {
		t.Fatal(err)
	}
	settings := argAfter(cmd.Args, "--settings")
	var s struct {
		Permissions map[string][]string `json:"permissions"`
		Hooks       map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct{ Type, Command string }
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(settings), &s); err != nil {
		t.Fatalf("settings %q: %v", settings, err)
	}
	if h := s.Hooks["PreToolUse"]; len(h) != 1 || h[0].Matcher != "*" || h[0].Hooks[0].Command != "'/opt/orch bin/orch' claude-hook" {
		t.Errorf("hooks = %+v", s.Hooks)
	}
	// Ask rules stay with the hook: Claude Code would refuse an approved call on an ask rule in -p.
	if len(s.Permissions["ask"]) != 0 || len(s.Permissions["deny"]) != 1 {
		t.Errorf("permissions = %v", s.Permissions)
	}
	if !hasEnv(cmd.Env, HookEnv+"=") {
		t.Errorf("env %v has no %s", cmd.Env, HookEnv)
	}

	without := NewClaude(ClaudeConfig{})
	cmd, _ = without.Command(Request{Prompt: "go", Permissions: st})
	_ = json.Unmarshal([]byte(argAfter(cmd.Args, "--settings")), &s)
	if len(s.Permissions["ask"]) != 1 || !strings.Contains(strings.Join(s.Permissions["allow"], " "), "Bash") {
		t.Errorf("without a hook the rules carry the policy: %v", s.Permissions)
	}

	cmd, err = with.Command(Request{SessionID: "s1", ResumePaused: true, Permissions: st})
	if err != nil {
		t.Fatal(err)
	}
	if argAfter(cmd.Args, "--resume") != "s1" || cmd.Args[len(cmd.Args)-1] != argAfter(cmd.Args, "--settings") {
		t.Errorf("a paused session resumes with no prompt: %q", cmd.Args)
	}
	if _, err := with.Command(Request{ResumePaused: true}); err == nil {
		t.Error("resuming a paused call without its session: no error")
	}
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func hasEnv(env []string, prefix string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func TestParserPausedAndDenied(t *testing.T) {
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s1","claude_code_version":"2.1.263","tools":["Bash"]}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_a","name":"Bash","input":{"command":"npm test"}}]},"session_id":"s1"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"PreToolUse:Bash hook error: ` + ApprovalMarker + ` asks","is_error":true}]},"session_id":"s1"}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"toolu_b","name":"Write","input":{"file_path":"/tmp/b.txt","content":"hello"}}]},"session_id":"s1"}`,
		`{"type":"result","subtype":"success","stop_reason":"tool_deferred","terminal_reason":"tool_deferred","is_error":false,"num_turns":1,"result":"","permission_denials":[{"tool_name":"Read","tool_use_id":"toolu_c","tool_input":{"file_path":"/elsewhere/x"}}],"session_id":"s1","deferred_tool_use":{"id":"toolu_b","name":"Write","input":{"file_path":"/tmp/b.txt","content":"hello"}}}`,
	}
	p := newClaudeParser()
	var seen []string
	p.WatchTools(func(c Call) { seen = append(seen, c.Describe()) })
	for _, l := range lines {
		p.Line([]byte(l))
	}
	r := p.Finish(0, nil)
	if r.Version != "2.1.263" || r.StopReason != "tool_deferred" || r.Paused == nil || r.Paused.ID != "toolu_b" || r.Paused.Tool != "Write" {
		t.Errorf("paused: %+v", r)
	}
	if len(r.Denied) != 2 || r.Denied[0].ID != "toolu_a" || r.Denied[0].Tool != "Bash" || r.Denied[1].Tool != "Read" {
		t.Errorf("denied: %+v", r.Denied)
	}
	if strings.Join(seen, "|") != "Bash: npm test|Write: /tmp/b.txt" {
		t.Errorf("watched: %q", seen)
	}
	if !SupportsDefer("2.1.89 (Claude Code)") || SupportsDefer("2.1.63") || !SupportsDefer("2.10.0") || !SupportsDefer("garbage") {
		t.Error("SupportsDefer")
	}
	if !OffersQuestions("2.1.186 (Claude Code)") || OffersQuestions("2.1.187") || OffersQuestions("2.2.0") {
		t.Error("OffersQuestions")
	}
}

// hookSource is what a hook program decides by: the state's form and the decisions made from it. hookSourceDigest is
// its SHA-256 when HookProtocol was last considered.
var hookSource = []string{"hook.go", "permissions.go"}

const hookSourceDigest = "f84e39c42240675faea3501bc9e1547c3df0ad2551bb815f8499a8086ed47ba4"

// A change to what the hook decides by is a change of HookProtocol, or orch would give its runs an orch-hook of
// another release that reads today's state by yesterday's rules. The test cannot tell whether a change matters: it
// makes whoever changes the hook's source decide, by failing until the digest is brought up to date.
func TestHookProtocolFollowsItsSource(t *testing.T) {
	h := sha256.New()
	for _, name := range hookSource {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(data)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != hookSourceDigest {
		t.Fatalf("the hook's source (%s) changed. If what the hook reads or decides changed, raise HookProtocol (now %q); "+
			"then set hookSourceDigest to %s", strings.Join(hookSource, ", "), HookProtocol, got)
	}
}
