package worker

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/orchrun/orch/agent"
)

// What the agent says enters orch here, and only here: its text, its errors, its stderr and its tool calls are checked
// for the secrets orch holds and have them taken out before anything judges, keeps, emits or shows them. So the
// events, the journal, the archive, the terminal, `orch logs`, Slack and the web view, the brain, commit messages and
// pull requests all get the redacted text, and none of them has to redact it again.

// intake gathers the names of the secrets found in what one agent run said, the calls it made as it ran included.
type intake struct {
	w     *Worker
	mu    sync.Mutex
	found []string
	// calls are the latest tool calls the agent made, oldest first (maxCallsKept), secrets taken out.
	calls []agent.Call
}

// maxCallsKept bounds the calls an intake keeps to find the attempt's effects in (agent.HookState.Effects).
const maxCallsKept = 256

// note adds names not noted yet.
func (in *intake) note(names []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(in.found, n) {
			in.found = append(in.found, n)
		}
	}
}

// watch wraps the function that receives each tool call as the agent makes it: it gets the call with orch's secrets
// taken out of its input.
func (in *intake) watch(fn func(agent.Call)) func(agent.Call) {
	return func(c agent.Call) {
		c = in.call(c)
		in.keep(c)
		fn(c)
	}
}

// keep remembers a call, the latest maxCallsKept.
func (in *intake) keep(c agent.Call) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.calls) == maxCallsKept {
		in.calls = slices.Delete(in.calls, 0, 1)
	}
	in.calls = append(in.calls, c)
}

// made returns the calls kept, oldest first.
func (in *intake) made() []agent.Call {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.calls)
}

// call takes orch's secrets out of a tool call's input, and notes them. The patterns are not applied to an input: a
// file the agent writes may hold an example password, which is the diff's to judge; a call is described (and that
// description redacted by pattern) where it is shown.
func (in *intake) call(c agent.Call) agent.Call {
	if len(c.Input) == 0 {
		return c
	}
	s := string(c.Input)
	in.note(in.w.cfg.Secrets.FindValues(s))
	c.Input = json.RawMessage(in.w.cfg.Secrets.RedactValues(s))
	return c
}

// result takes the secrets out of what the agent said and returns it with its stderr, both redacted. A secret orch
// holds is noted wherever it is; a credential the patterns know, in the agent's answer text.
func (in *intake) result(res agent.Result, stderr string) (agent.Result, string) {
	rd := in.w.cfg.Secrets
	text, found := rd.Take(res.Text)
	in.note(found)
	res.Text = text
	errs := make([]string, len(res.Errors))
	for i, e := range res.Errors {
		in.note(rd.FindValues(e))
		errs[i] = rd.Redact(e)
	}
	if res.Errors != nil {
		res.Errors = errs
	}
	in.note(rd.FindValues(stderr))
	stderr = rd.Redact(stderr)
	if res.Paused != nil {
		c := in.call(*res.Paused)
		res.Paused = &c
	}
	if res.Denied != nil {
		denied := make([]agent.Call, len(res.Denied))
		for i, c := range res.Denied {
			denied[i] = in.call(c)
		}
		res.Denied = denied
	}
	return res, stderr
}

// secrets are the names noted, in the order they were found.
func (in *intake) secrets() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.found)
}
