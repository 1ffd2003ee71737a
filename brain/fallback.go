package brain

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// LLM is what Fallback needs from an LLM backend; *Anthropic and *ClaudeCLI are two.
type LLM interface {
	Interpret(ctx context.Context, output string) (Interpretation, error)
	Decide(ctx context.Context, in DecideInput) (Decision, error)
	Tasks(ctx context.Context, plan string) (TaskList, error)
}

var (
	_ LLM = (*Anthropic)(nil)
	_ LLM = (*ClaudeCLI)(nil)
)

// Fallback is the brain a worker uses: an LLM where one is configured, the offline heuristic when the LLM's
// reply is unusable. Three things can happen on each judgement:
//   - the LLM answers: its result, Via "anthropic" or "claude";
//   - the LLM gives no usable answer (ErrInvalidReply), or, on decide, a retry that would get the agent around a
//     safeguard (a push a secret scanner blocked, guidance to rewrite history or skip a hook): the heuristic
//     answers, Via "heuristic", and the result's Fallback field says why, for a brain_fallback event;
//   - the LLM is unavailable (ErrUnavailable) or ctx is done: the error is returned as it is, and the
//     caller saves the run and stops ("Brain unavailable: …; state saved; resume with: orch resume RUN_ID").
//
// Results carry the LLM's Usage in every case, failed calls included. The zero value (no LLM) is the
// heuristic brain.
type Fallback struct {
	LLM       LLM        // nil: the heuristic answers everything
	Heuristic *Heuristic // nil: the zero Heuristic
	// SplitPlan is the offline task extractor for Tasks (the markdown plan splitter: brain does not import
	// pipeline, so cmd wires it). Nil: Tasks has no fallback and returns the LLM's error.
	SplitPlan func(plan string) ([]Task, error)
	// LLMOnly skips the explicit-marker fast path, so every output goes to the LLM (--llm-only).
	LLMOnly bool
}

// Interpret judges an agent's output. Unless LLMOnly, an explicit marker ("STATUS: needs_human",
// "NEEDS_HUMAN: …") or an empty output is answered without an LLM call.
func (f *Fallback) Interpret(ctx context.Context, output string) (Interpretation, error) {
	if f.LLM == nil {
		return f.heuristic().Interpret(ctx, output)
	}
	if !f.LLMOnly {
		if in, ok := ExplicitMarkers(output); ok {
			return in, nil
		}
		if strings.TrimSpace(withoutForms(output)) == "" {
			return f.heuristic().Interpret(ctx, output)
		}
	}
	in, err := f.LLM.Interpret(ctx, output)
	if err == nil || !errors.Is(err, ErrInvalidReply) {
		return in, err
	}
	h, herr := f.heuristic().Interpret(ctx, output)
	if herr != nil {
		return Interpretation{Usage: in.Usage}, fmt.Errorf("%v; the heuristic: %w", err, herr)
	}
	h.Fallback, h.Usage = fallbackNote(err), in.Usage
	return h, nil
}

// Decide chooses retry or escalate for a failed task.
func (f *Fallback) Decide(ctx context.Context, in DecideInput) (Decision, error) {
	if f.LLM == nil {
		d, err := f.heuristic().Decide(ctx, in)
		d.Via = viaHeuristic
		return d, err
	}
	d, err := f.LLM.Decide(ctx, in)
	if err == nil {
		if why := unsafeRetry(in, d); why != "" {
			// The model's retry would have the agent get around a safeguard: the heuristic decides instead.
			h, herr := f.heuristic().Decide(ctx, in)
			if herr != nil {
				return Decision{Usage: d.Usage}, fmt.Errorf("%s; the heuristic: %w", why, herr)
			}
			h.Via, h.Fallback, h.Usage = viaHeuristic, why+"; the heuristic answered instead", d.Usage
			return h, nil
		}
		return d, nil
	}
	if !errors.Is(err, ErrInvalidReply) {
		return d, err
	}
	h, herr := f.heuristic().Decide(ctx, in)
	if herr != nil {
		return Decision{Usage: d.Usage}, fmt.Errorf("%v; the heuristic: %w", err, herr)
	}
	h.Via, h.Fallback, h.Usage = viaHeuristic, fallbackNote(err), d.Usage
	return h, nil
}

// Tasks extracts the tasks of a plan.
func (f *Fallback) Tasks(ctx context.Context, plan string) (TaskList, error) {
	if f.LLM == nil {
		return f.split(plan, TaskList{})
	}
	l, err := f.LLM.Tasks(ctx, plan)
	if err == nil || !errors.Is(err, ErrInvalidReply) || f.SplitPlan == nil {
		return l, err
	}
	return f.split(plan, TaskList{Fallback: fallbackNote(err), Usage: l.Usage})
}

func (f *Fallback) split(plan string, l TaskList) (TaskList, error) {
	if f.SplitPlan == nil {
		return l, errors.New("extracting tasks: no LLM brain and no plan splitter")
	}
	ts, err := f.SplitPlan(plan)
	if err != nil {
		return l, fmt.Errorf("extracting tasks: %w", err)
	}
	l.Tasks, l.Via = ts, viaHeuristic
	return l, nil
}

func (f *Fallback) heuristic() *Heuristic {
	if f.Heuristic == nil {
		return &Heuristic{}
	}
	return f.Heuristic
}

// unsafeGuidanceRe is retry guidance that would have an agent rewrite published history or get around a safeguard
// (a secret scanner, a hook, branch protection): what a person must decide, never what an agent is told to try.
var unsafeGuidanceRe = lazyRE(oneOf(`(?i)`,
	`\bforce[- ]push`,
	`\bpush\s+(?:\S+\s+)*?(?:--force|-f)\b`,
	`--force-with-lease`,
	`--no-verify`,
	`\bfilter-(?:branch|repo)\b`,
	`\bbfg\b`,
	`\brewrit(?:e|ing) (?:the )?(?:git |commit )?history\b`,
	`\b(?:rebase -i|interactive rebase)\b`,
	`\b(?:commit --amend|amend (?:the|that|this) commit)\b`,
	`\b(?:bypass|skip|disable|circumvent|get around|work around|override)\b[^.\n]{0,40}\b(?:scanner|scanning|push protection|secret detection|pre-commit|pre-receive|hooks?|branch protection)\b`,
	`\b(?:allow|unblock|mark)\b[^.\n]{0,20}\bsecret\b[^.\n]{0,30}\b(?:allowed|false positive|url|link)\b`,
))

// unsafeRetry says why an LLM's decision must not stand, or "": a retry of a push a secret scanner blocked (the
// secret is already in a commit; only its owner can revoke it, and a person decides how to clean the history), or
// guidance that tells the agent to rewrite history or get around a safeguard.
func unsafeRetry(in DecideInput, d Decision) string {
	if d.Decision != Retry || len(in.AttemptHistory) == 0 {
		return ""
	}
	if secretScanRe.MatchString(newDoc(in.AttemptHistory[len(in.AttemptHistory)-1]).text) {
		return "the LLM brain chose to retry a push a secret scanner blocked"
	}
	if unsafeGuidanceRe.MatchString(d.GuidanceForRetry) {
		return "the LLM brain's retry guidance would have the agent rewrite history or get around a safeguard"
	}
	return ""
}

func fallbackNote(err error) string {
	return err.Error() + "; the heuristic answered instead"
}

// Available reports whether the named brain ("heuristic", "claude", "anthropic") can be used here, without
// calling it, for --brain auto and `orch health`: "claude" needs the CLI on PATH (lookPath is exec.LookPath
// outside tests), "anthropic" an API key. The error wraps ErrUnavailable and says what is missing.
func Available(name string, lookPath func(string) (string, error), apiKey string) error {
	switch name {
	case "heuristic":
		return nil
	case "claude":
		if _, err := lookPath("claude"); err != nil {
			return unavailable(fmt.Sprintf("claude CLI not found on PATH (%v)", err), err)
		}
		return nil
	case "anthropic":
		if strings.TrimSpace(apiKey) == "" {
			return unavailable("anthropic brain: no API key (ANTHROPIC_API_KEY is not set)", nil)
		}
		return nil
	}
	return fmt.Errorf("brain %q: want heuristic, claude or anthropic", name)
}
