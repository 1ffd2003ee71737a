package worker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/jobs"
)

// hookSays runs orch's hook on one call with the state a task's next agent run gets, and returns its decision.
func hookSays(t *testing.T, st *agent.HookState, id, tool, input string) string {
	t.Helper()
	state, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	in := `{"hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_use_id":"` + id + `","tool_input":` + input + `}`
	var out bytes.Buffer
	if err := agent.RunHook(strings.NewReader(in), &out, string(state), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	var o struct {
		HookSpecificOutput struct {
			PermissionDecision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	json.Unmarshal(out.Bytes(), &o)
	return o.HookSpecificOutput.PermissionDecision
}

// "Allow once" allows the paused call alone: the same command made again, under a new id, asks again. A call that
// was refused (a CLI that cannot pause) comes back under a new id, so there the decision holds for the same input.
func TestAllowOnceIsForThePausedCall(t *testing.T) {
	push := `{"command":"git push --force"}`
	for _, tt := range []struct {
		name   string
		denied bool
		repeat string
	}{{"paused", false, "defer"}, {"refused", true, "allow"}} {
		t.Run(tt.name, func(t *testing.T) {
			r := &jobs.Run{Options: jobs.Options{Sandbox: "docker"}}
			task := &jobs.Task{Paused: &jobs.Paused{Session: "s1", Denied: tt.denied,
				Calls:    []jobs.ToolCall{{ID: "toolu_1", Tool: "Bash", Input: json.RawMessage(push)}},
				Decision: &jobs.CallDecision{Allow: true}}}
			st := (&Worker{}).hookState(r, task, t.TempDir())
			if got := hookSays(t, st, "toolu_1", "Bash", push); got != "allow" {
				t.Fatalf("the call a person allowed: %s", got)
			}
			if got := hookSays(t, st, "toolu_2", "Bash", push); got != tt.repeat {
				t.Fatalf("the same command under a new id: %s, want %s", got, tt.repeat)
			}
			if got := hookSays(t, st, "toolu_3", "Bash", `{"command":"git push origin main"}`); got != "defer" {
				t.Fatalf("another push: %s, want defer", got)
			}
		})
	}
}

// A call refused for good — a person denied it, or a deny rule names it — is no new question when Claude Code lists
// it among the result's permission_denials; a call refused for want of an approval is.
func TestRefusedCallsAreNoQuestion(t *testing.T) {
	push := agent.Call{ID: "toolu_1", Tool: "Bash", Input: json.RawMessage(`{"command":"git push --force"}`)}
	env := agent.Call{ID: "toolu_2", Tool: "Read", Input: json.RawMessage(`{"file_path":"/w/.env"}`)}
	deploy := agent.Call{ID: "toolu_3", Tool: "Bash", Input: json.RawMessage(`{"command":"kubectl apply -f x.yaml"}`)}
	st := &agent.HookState{Policy: agent.Policy{Default: agent.Allow, Ask: []string{"Bash(kubectl:*)", "Bash(git push:*)"},
		Deny: []string{"Read(**/.env)"}}, Root: "/w",
		Decisions: []agent.HookDecision{{ToolUseID: "toolu_1", Allow: false, Message: "not now"}}}
	if p := pausedCalls(agent.Result{SessionID: "s", Denied: []agent.Call{push, env}}, st, "/home/u"); p != nil {
		t.Fatalf("refused calls became a question: %+v", p)
	}
	p := pausedCalls(agent.Result{SessionID: "s", Denied: []agent.Call{push, env, deploy}}, st, "/home/u")
	if p == nil || !p.Denied || len(p.Calls) != 1 || p.Calls[0].ID != "toolu_3" || p.Calls[0].Rule != "Bash(kubectl:*)" {
		t.Fatalf("paused = %+v", p)
	}
}
