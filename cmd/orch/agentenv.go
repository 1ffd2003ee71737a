package main

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/sandbox"
)

// The agent is given an allowlist of orch's environment (sandbox.AgentEnv), in both sandboxes. More is passed on
// purpose by name, with orch.yaml agent_env or ORCH_AGENT_ENV; orch's own credentials never, whatever asks for them.

// ownPrefixes name orch's own settings; the credentials orch reads (secretEnv, urlEnv, headerEnv: Slack's, GitHub's,
// the web token, the Redis URL, the notification webhook, the telemetry exporter's endpoints and headers) are its own
// too, and so is the Docker engine orch drives. An agent given one could act as orch, or as root on the host. The
// Anthropic key is the claude agent's own credential as much as the brain's: it may be passed to another agent CLI.
var ownPrefixes = []string{"ORCH_", "SLACK_"}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// agentPass reads the names of the variables given to agents on purpose: ORCH_AGENT_ENV (comma-separated) over
// orch.yaml agent_env. A name that is not one, or that is one of orch's own, exits 2 naming where it came from.
func (a *app) agentPass(cmd *cobra.Command) ([]string, error) {
	from, list := "orch.yaml agent_env", a.set.file.AgentEnv
	if v := a.env("ORCH_AGENT_ENV"); strings.TrimSpace(v) != "" {
		from, list = "ORCH_AGENT_ENV", strings.Split(v, ",")
	}
	var names []string
	for _, n := range list {
		n = strings.TrimSpace(n)
		switch {
		case n == "" && from == "ORCH_AGENT_ENV":
			continue // "A,,B" or a trailing comma
		case !envNamePattern.MatchString(n):
			return nil, usageErr("%s: %q is not an environment variable name (letters, digits and '_', not starting with a digit)", from, safetext.OneLine(n, 60))
		case ownVariable(n):
			return nil, usageErr("%s: %s is orch's own (a credential or a setting of orch's): no agent is given it. "+
				"Give the agent a credential of its own, under a name of its own", from, n)
		}
		names = append(names, n)
	}
	return names, nil
}

// ownVariable reports whether name is one of orch's own settings or credentials.
func ownVariable(name string) bool {
	for _, p := range ownPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	if name == "ANTHROPIC_API_KEY" {
		return false
	}
	return slices.Contains(secretEnv, name) || slices.Contains(urlEnv, name) || slices.Contains(headerEnv, name) ||
		slices.Contains(tokensEnv, name) ||
		name == "DOCKER_HOST"
}

// envAgent is the agent CLI whose own credential and settings a run's agent is given: claude's, codex's, or none
// (the sim agent, a cmd: template: pass what those need with agent_env).
func envAgent(opts jobs.Options) string {
	switch opts.Agent {
	case "claude", "codex":
		return opts.Agent
	}
	return ""
}

// locals are this process's local sandboxes, one per agent CLI: each gives its agents the allowlist of orch's
// environment with that CLI's own variables.
type locals struct {
	shim    []string
	environ func() []string
	pass    []string
	mu      sync.Mutex
	open    map[string]*sandbox.Local
}

func newLocals(shim []string, environ func() []string, pass []string) *locals {
	return &locals{shim: shim, environ: environ, pass: pass, open: map[string]*sandbox.Local{}}
}

// forRun returns the local sandbox of a run's agent.
func (l *locals) forRun(opts jobs.Options) *sandbox.Local {
	key := envAgent(opts)
	l.mu.Lock()
	defer l.mu.Unlock()
	if lo, ok := l.open[key]; ok {
		return lo
	}
	lo := sandbox.NewLocal(sandbox.LocalConfig{Shim: l.shim,
		Env: sandbox.AgentEnv(l.environ(), sandbox.EnvPolicy{Agent: key, Pass: l.pass})})
	l.open[key] = lo
	return lo
}
