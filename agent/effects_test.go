package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

func runCall(id, cmd string) Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return Call{ID: id, Tool: "Bash", Input: in}
}

func TestEffectsAreTheCallsAPersonLetThrough(t *testing.T) {
	st := HookState{Policy: Policy{Default: Ask, Allow: []string{"Bash(go test:*)"},
		Ask: []string{"Bash(git push:*)", "Bash(npm publish:*)", "Bash(kubectl:*)"}},
		Approved:  []string{"Bash(git push:*)"},
		Decisions: []HookDecision{{ToolUseID: "t-publish", Allow: true}, {ToolUseID: "t-kubectl", Allow: false}},
		Root:      "/work"}
	calls := []Call{
		runCall("t-test", "go test ./..."),                       // the policy allows it: no person involved
		runCall("t-push", "git push --force origin main"),        // asks by a rule; allowed for the run
		runCall("t-curl", "curl -s https://example.com"),         // asks by default only: nothing beyond the worktree said
		runCall("t-publish", "npm publish"),                      // asks by a rule; a person allowed it once
		runCall("t-kubectl", "kubectl apply -f deploy.yaml"),     // a person denied it
		runCall("t-push2", "git push origin HEAD:refs/heads/x"),  // refused in the session: did not run
		runCall("t-paused", "git push origin HEAD:refs/heads/y"), // paused: did not run yet
	}
	res := Result{Denied: []Call{calls[5]}, Paused: &calls[6]}
	got := st.Effects(calls, res, "/home/agent")
	var lines []string
	for _, e := range got {
		lines = append(lines, e.String())
	}
	want := []string{"`Bash: git push --force origin main` (allowed for this run: Bash(git push:*))",
		"`Bash: npm publish` (allowed once by a person)"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("effects:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	many := make([]Call, 30)
	for i := range many {
		many[i] = runCall("p", "git push origin main")
	}
	if n := len(st.Effects(many, Result{}, "")); n != maxEffects {
		t.Fatalf("%d effects reported, want at most %d", n, maxEffects)
	}
}
