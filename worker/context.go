package worker

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

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

// workspaceChanges lists what the task changed, when the workspace is a git repository: the files (git status) and
// a summary of the changes (git diff --stat). A workspace that is not a repository has nothing to show; a slow git is
// not waited for.
func workspaceChanges(ctx context.Context, dir string) (files []string, diff string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		return nil, ""
	}
	for _, line := range strings.Split(strings.TrimRight(string(status), "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			files = append(files, line)
		}
	}
	stat, err := exec.CommandContext(ctx, "git", "-C", dir, "diff", "--stat", "HEAD").Output()
	if err == nil {
		diff = strings.TrimSpace(string(stat))
	}
	return files, diff
}
