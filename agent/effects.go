package agent

import (
	"slices"

	"github.com/orchrun/orch/internal/safetext"
)

// Effects beyond the worktree. A call the policy asks a person about by one of its rules or checks (pushing,
// publishing, deploying, credentials, files outside the workspace), not by its default, reaches past what orch can
// take back: a branch is reset, a worktree made anew, but a push stays pushed. When such a call ran in an attempt —
// a person allowed it once, or for the run — running the task again may run it again, and that is a person's call,
// not a retry's.

// Effect is a call with effects beyond the worktree that ran in an attempt, and who let it through.
type Effect struct {
	Call Call
	// By says who let it through: "allowed for this run: <rule>", or "allowed once by a person".
	By string
}

// maxEffects bounds the calls an attempt reports: a question names them, and a few are enough to decide by.
const maxEffects = 10

// Effects are the calls of an attempt (as the agent made them, oldest first) that ran with a person's leave and reach
// beyond the worktree: the policy asks about them by a rule or a check, the call was neither refused nor paused, and
// a rule allowed for the run or a person's decision let it through. st is the state the attempt's hook decided from.
func (st HookState) Effects(calls []Call, res Result, home string) []Effect {
	var out []Effect
	for _, c := range calls {
		if len(out) == maxEffects {
			break
		}
		if res.Paused != nil && res.Paused.ID == c.ID || slices.ContainsFunc(res.Denied, func(d Call) bool { return d.ID == c.ID }) {
			continue
		}
		bare := st.Policy.Decide(c, nil, st.Root, st.Root, home)
		if bare.Decision != Ask || bare.Default {
			continue
		}
		if v := st.Policy.Decide(c, st.Approved, st.Root, st.Root, home); v.Decision == Allow && v.Rule != "" {
			out = append(out, Effect{Call: c, By: "allowed for this run: " + v.Rule})
			continue
		}
		if d, ok := st.decisionFor(c); ok && d.Allow {
			out = append(out, Effect{Call: c, By: "allowed once by a person"})
		}
	}
	return out
}

// String says an effect in a line, bounded: the call and who let it through.
func (e Effect) String() string {
	return "`" + safetext.OneLine(safetext.Redact(e.Call.Describe()), 200) + "` (" + e.By + ")"
}
