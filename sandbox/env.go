package sandbox

import (
	"slices"
	"strings"
)

// An agent is given an allowlist of orch's environment, never the whole of it: orch's own credentials (Slack, GitHub,
// the web token, the Redis URL, the telemetry headers) are in that environment, and an agent that prints `env` or
// writes it to a file would otherwise hand them to whatever reads the output or the branch.

// EnvPolicy says what of orch's environment an agent process is given.
type EnvPolicy struct {
	// Container says the process runs in a container: its image gives PATH, HOME, the user and the CA bundle, and a
	// host path means nothing there, so only what is the same on both sides (locale, terminal, time zone, proxies,
	// the agent CLI's credential and settings) is given.
	Container bool
	// Agent names the agent CLI ("claude", "codex"): the variables its documentation says it reads for its
	// credential and its settings are given too. Other agents (sim, cmd: templates) get none of them.
	Agent string
	// Pass names more variables to give, on purpose (orch.yaml agent_env). The caller has checked that none is one
	// of orch's own credentials.
	Pass []string
}

// The allowlist. Each entry is a variable name, or a prefix when it ends with "*".
var (
	// runEnv is what any program needs to run and to talk to the network like the rest of the machine.
	runEnv = []string{
		"LANG", "LANGUAGE", "LC_*", "TZ", // locale and time zone
		"TERM", "COLORTERM", "NO_COLOR", // the terminal, for programs that colour their output
		// Proxies, in both spellings: curl and most tools read the lower-case ones, Node and Go also the upper-case.
		"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	}
	// hostEnv is what a process on the host needs besides, and what would be a wrong path in a container.
	hostEnv = []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR",
		"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", // where CLIs keep their own settings
		// CA bundles: OpenSSL, Node (Claude Code), Python requests, curl, git, the AWS SDKs (Bedrock).
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
		"AWS_CA_BUNDLE",
		// The settings of an instrumented Go binary (coverage counters, the race detector): orch's own binary runs
		// beside the agent as the sandbox's shim, the sim agent and the permission hook, and is built so in tests.
		"GOCOVERDIR", "GORACE",
	}
	// agentEnv are the variables each agent CLI documents for its credential and its settings, in both sandboxes.
	agentEnv = map[string][]string{
		// Claude Code: code.claude.com/docs/en/env-vars (the direct API, an LLM gateway, Amazon Bedrock, Google
		// Vertex AI, Microsoft Foundry), the ones an operator sets to run it unattended.
		"claude": {
			"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS",
			"CLAUDE_CODE_OAUTH_TOKEN",
			"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
			"ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION",
			"CLAUDE_CODE_SUBAGENT_MODEL",
			"CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
			"AWS_BEARER_TOKEN_BEDROCK", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
			"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
			"CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_BASE_URL",
			"CLAUDE_CODE_SKIP_VERTEX_AUTH", "CLOUD_ML_REGION", "VERTEX_REGION_*",
			"CLAUDE_CODE_USE_FOUNDRY", "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_BASE_URL",
			"ANTHROPIC_FOUNDRY_RESOURCE", "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
			"CLAUDE_CODE_MAX_OUTPUT_TOKENS", "MAX_THINKING_TOKENS", "API_TIMEOUT_MS", "BASH_DEFAULT_TIMEOUT_MS",
			"BASH_MAX_TIMEOUT_MS", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT",
			"DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS",
			"CLAUDE_CODE_CLIENT_KEY_PASSPHRASE",
		},
		// Codex: developers.openai.com/codex/environment-variables, and the built-in OpenAI provider's key, base URL
		// and headers (developers.openai.com/codex/config-reference, model_providers).
		"codex": {
			"CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION",
			"OPENAI_PROJECT",
		},
	}
	// agentHostEnv are the agent CLIs' variables that name host paths (their settings directory, a client
	// certificate, a cloud credentials file): given on the host only.
	agentHostEnv = map[string][]string{
		"claude": {"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_CLIENT_CERT", "CLAUDE_CODE_CLIENT_KEY",
			"GOOGLE_APPLICATION_CREDENTIALS", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"},
		"codex": {"CODEX_HOME", "CODEX_SQLITE_HOME"},
	}
)

// AgentEnv picks from environ (orch's own environment, KEY=VALUE) what the policy gives an agent, in environ's order.
// Whatever is not named is left out: a name orch learns of later is not given until someone decides it should be.
func AgentEnv(environ []string, p EnvPolicy) []string {
	allowed := slices.Concat(runEnv, agentEnv[p.Agent], p.Pass)
	if !p.Container {
		allowed = slices.Concat(allowed, hostEnv, agentHostEnv[p.Agent])
	}
	var out []string
	seen := map[string]bool{}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || seen[k] || !allowedName(k, allowed) {
			continue
		}
		seen[k] = true
		out = append(out, kv)
	}
	if out == nil {
		out = []string{} // an empty environment, not "inherit"
	}
	return out
}

// allowedName reports whether name is on the list, by name or by a prefix entry ("LC_*").
func allowedName(name string, list []string) bool {
	for _, a := range list {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if a == name {
			return true
		}
	}
	return false
}
