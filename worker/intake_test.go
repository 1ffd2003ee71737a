package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// An agent that says one of orch's own secrets — one no pattern knows — in its answer, in a tool call and on stderr:
// the run stops on a security question that names the secret by where orch got it, and the value is nowhere orch
// keeps or shows anything (the run's state, its events, the activity the terminal and Slack show).
func TestHeldSecretInOutputEscalatesAndIsRedacted(t *testing.T) {
	rdb := clients(t)["miniredis"]
	const token = "w3b-t0ken-0f-orch" // ORCH_WEB_TOKEN's value: a string no pattern recognises
	claude := script(t, `cat <<'EOF'
{"type":"system","subtype":"init","session_id":"s-1","claude_code_version":"2.1.186"}
{"type":"assistant","session_id":"s-1","message":{"content":[{"type":"tool_use","id":"tu-1","name":"Bash","input":{"command":"curl -H 'X-Token: `+token+`' http://127.0.0.1:9/"}}]}}
{"type":"result","subtype":"success","is_error":false,"session_id":"s-1","result":"Done. I signed in with `+token+`. All tests pass.","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5}}
EOF
echo "using `+token+`" >&2`)
	h := newHarness(t, rdb, "", func(jobs.Options) (agent.Adapter, error) {
		return agent.NewClaude(agent.ClaudeConfig{Binary: claude}), nil
	})
	h.w.cfg.Secrets = safetext.NewRedactor([]safetext.Secret{{Name: "ORCH_WEB_TOKEN", Value: token}})
	r := h.newRun(t, "1.1")
	if _, err := h.store.Update(context.Background(), r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Options.Agent = "claude"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := drive(t, h, r.ID)
	e := got.OpenEscalation()
	if e == nil || e.Trigger != jobs.TriggerSecurity {
		t.Fatalf("want a security escalation, got %s %+v", got.Status, e)
	}
	if !strings.Contains(e.Question, "the value of ORCH_WEB_TOKEN") {
		t.Errorf("the question does not say which secret leaked: %q", e.Question)
	}
	if !strings.Contains(e.Output, "[REDACTED:ORCH_WEB_TOKEN]") {
		t.Errorf("the output kept is not the redacted one: %q", e.Output)
	}
	ctx := context.Background()
	for _, k := range rdb.Keys(ctx, "*").Val() {
		var vals []string
		switch rdb.Type(ctx, k).Val() {
		case "string":
			vals = []string{rdb.Get(ctx, k).Val()}
		case "list":
			vals = rdb.LRange(ctx, k, 0, -1).Val()
		case "hash":
			vals = rdb.HVals(ctx, k).Val()
		case "stream":
			for _, m := range rdb.XRange(ctx, k, "-", "+").Val() {
				data, _ := json.Marshal(m.Values)
				vals = append(vals, string(data))
			}
		}
		for _, v := range vals {
			if strings.Contains(v, token) {
				t.Fatalf("the secret is stored in %s", k)
			}
		}
	}
	evs, err := h.store.Events(ctx, r.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	activity := false
	for _, ev := range evs {
		data, _ := json.Marshal(ev)
		if strings.Contains(string(data), token) {
			t.Fatalf("the secret is in event %s", ev.Type())
		}
		if a, ok := ev.Body.(jobs.AgentActivityEvent); ok && strings.Contains(strings.Join(a.Calls, " "), "[REDACTED:ORCH_WEB_TOKEN]") {
			activity = true
		}
	}
	if !activity {
		t.Error("no agent_activity event shows the redacted call")
	}
}
