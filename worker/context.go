package worker

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// customTriggers returns an escalation for every configured trigger whose pattern matches the agent's output. The
// patterns were validated when the run was created; one that does not compile here is skipped.
func customTriggers(triggers []jobs.CustomTrigger, output string) []escalation.Spec {
	var out []escalation.Spec
	for _, tr := range triggers {
		re, err := regexp.Compile(tr.Pattern)
		if err != nil {
			continue
		}
		loc := re.FindStringIndex(output)
		if loc == nil {
			continue
		}
		q := tr.Question
		if q == "" {
			q = fmt.Sprintf("The agent's output matched the trigger %q: %s", tr.Name, lineAround(output, loc[0]))
		}
		out = append(out, escalation.Spec{Trigger: jobs.TriggerCustom, Name: tr.Name, Priority: tr.Priority,
			Source: "orch", Question: q, Output: output})
	}
	return out
}

// lineAround is the line of s that holds offset i, trimmed.
func lineAround(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s)
	} else {
		end += i
	}
	return strings.TrimSpace(s[start:end])
}

// examine looks at the run's worktree after the agent worked, before anything of it is judged, committed or
// pushed: what the agent did to the git that orch trusts, what the work changes, and whether it adds a secret to the
// repository. A worktree that cannot be examined is said in the log; its work is still judged, and CommitTask does not
// trust it either.
func (w *Worker) examine(ctx context.Context, at *attempt, out *outcome) {
	if at.wt == nil || w.cfg.Workspaces == nil {
		return
	}
	ex, err := w.cfg.Workspaces.Examine(ctx, *at.wt)
	if err != nil && ctx.Err() == nil {
		w.log.Warn("examining the run's worktree after the agent", "run_id", at.run.ID, "err", err)
	}
	out.tampered = make([]string, len(ex.Tampered))
	for i, t := range ex.Tampered {
		out.tampered[i] = w.cfg.Secrets.Redact(t)
	}
	// Names the agent chose: shown to people, so redacted like everything else it wrote.
	out.files = make([]string, len(ex.Files))
	for i, f := range ex.Files {
		out.files[i] = w.cfg.Secrets.Redact(f)
	}
	out.diff = w.cfg.Secrets.Redact(ex.Stat)
	out.leaked = w.cfg.Secrets.FindInWork(ex.Added)
}

// security reports whether the attempt raised a security question: a secret in what the agent said or in what its
// work adds, or the git orch trusts tampered with. It stands before everything else, an approval included.
func (o *outcome) security() bool {
	return len(o.secrets) > 0 || len(o.tampered) > 0 || len(o.leaked) > 0
}
