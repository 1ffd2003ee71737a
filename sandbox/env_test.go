package sandbox

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// orchEnviron is an environment like a server's orch has: its own credentials beside what an agent needs.
func orchEnviron() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/orch", "USER=orch", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"TERM=xterm-256color", "TZ=Europe/Paris", "https_proxy=http://proxy.internal:3128", "NO_PROXY=localhost",
		"SSL_CERT_FILE=/etc/ssl/certs/ca.pem", "CLAUDE_CONFIG_DIR=/home/orch/.claude",
		"ANTHROPIC_API_KEY=sk-ant-agentkey", "CLAUDE_CODE_USE_BEDROCK=1", "VERTEX_REGION_CLAUDE_4_6_SONNET=europe-west1",
		"OPENAI_API_KEY=sk-openai-agentkey",
		"SLACK_BOT_TOKEN=xoxb-orch-bot-token", "SLACK_SIGNING_SECRET=orch-signing-secret",
		"SLACK_APP_TOKEN=xapp-orch-app-token", "ORCH_WEB_TOKEN=orch-web-token", "ORCH_GITHUB_TOKEN=orch-github-token",
		"GITHUB_TOKEN=orch-github-token-2", "ORCH_REDIS_URL=redis://:orch-redis-password@redis:6379/0",
		"ORCH_API_TOKENS=alice:orch-api-token", "ORCH_NOTIFY_WEBHOOK=https://hooks.example/orch-webhook-path",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=orch-otlp-header", "ORCH_GITHUB_WEBHOOK_SECRET=orch-webhook-secret",
		"SSH_AUTH_SOCK=/run/user/1000/ssh-agent", "DOCKER_HOST=unix:///var/run/docker.sock", "MY_TOOL_SETTING=fast",
		"NOT_A_PAIR", "=nameless",
	}
}

// orchOwn are the values of orch's own credentials in orchEnviron: no agent is given any of them.
var orchOwn = []string{"orch-bot-token", "orch-signing-secret", "orch-app-token", "orch-web-token",
	"orch-github-token", "orch-redis-password", "orch-api-token", "orch-webhook-path", "orch-otlp-header",
	"orch-webhook-secret"}

func names(env []string) []string {
	var n []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		n = append(n, k)
	}
	return n
}

func TestAgentEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		p    EnvPolicy
		want []string
	}{
		{"sim on the host", EnvPolicy{},
			[]string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "https_proxy", "NO_PROXY", "SSL_CERT_FILE"}},
		{"claude on the host", EnvPolicy{Agent: "claude"},
			[]string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "https_proxy", "NO_PROXY", "SSL_CERT_FILE",
				"CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "CLAUDE_CODE_USE_BEDROCK", "VERTEX_REGION_CLAUDE_4_6_SONNET"}},
		{"claude in a container", EnvPolicy{Container: true, Agent: "claude"},
			[]string{"LANG", "LC_ALL", "TERM", "TZ", "https_proxy", "NO_PROXY", "ANTHROPIC_API_KEY",
				"CLAUDE_CODE_USE_BEDROCK", "VERTEX_REGION_CLAUDE_4_6_SONNET"}},
		{"codex in a container", EnvPolicy{Container: true, Agent: "codex"},
			[]string{"LANG", "LC_ALL", "TERM", "TZ", "https_proxy", "NO_PROXY", "OPENAI_API_KEY"}},
		{"a cmd: agent given more on purpose", EnvPolicy{Container: true, Pass: []string{"MY_TOOL_SETTING", "ABSENT"}},
			[]string{"LANG", "LC_ALL", "TERM", "TZ", "https_proxy", "NO_PROXY", "MY_TOOL_SETTING"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := AgentEnv(orchEnviron(), c.p)
			if !slices.Equal(names(got), c.want) {
				t.Errorf("names = %q\nwant    %q", names(got), c.want)
			}
			for _, v := range orchOwn {
				if strings.Contains(strings.Join(got, "\n"), v) {
					t.Errorf("the agent is given %q", v)
				}
			}
		})
	}
	if got := AgentEnv(nil, EnvPolicy{}); got == nil || len(got) != 0 {
		t.Errorf("AgentEnv(nil) = %#v: want an empty environment, not nil (which the sandboxes take for \"inherit\")", got)
	}
}

// setOrchEnviron puts orchEnviron's credentials in this process's environment, as orch would have them.
func setOrchEnviron(t *testing.T) {
	for _, kv := range orchEnviron() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" && k != "PATH" && k != "HOME" {
			t.Setenv(k, v)
		}
	}
}

// The local sandbox's default environment is the allowlist of orch's own: an agent that prints its environment (or
// writes it into the work) shows none of orch's credentials.
func TestLocalAgentEnvironment(t *testing.T) {
	setOrchEnviron(t) // no t.Parallel: the environment is the process's
	for name, shim := range map[string][]string{"direct": nil, "shim": testShim()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := NewLocal(LocalConfig{Shim: shim})
			res, err := l.Exec(context.Background(), Spec{RunID: "r-env", Dir: dir,
				Args: []string{"/bin/sh", "-c", "env > env.txt; env"},
				Env:  []string{"ORCH_RUN_ID=r-env", "ORCH_TASK_ID=1.1", "ORCH_ATTEMPT=1"}}, nil)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec: %v, %+v", err, res)
			}
			file, err := os.ReadFile(dir + "/env.txt")
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{string(res.Stdout), string(file)} {
				for _, v := range orchOwn {
					if strings.Contains(text, v) {
						t.Errorf("the agent's environment holds %q:\n%s", v, text)
					}
				}
				for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
					"ORCH_RUN_ID=r-env", "ORCH_TASK_ID=1.1", "ORCH_ATTEMPT=1", "ORCH_SANDBOX_MARK="} {
					if !strings.Contains(text, want) {
						t.Errorf("the agent's environment lacks %s:\n%s", want, text)
					}
				}
				for _, absent := range []string{"SSH_AUTH_SOCK=", "DOCKER_HOST=", "MY_TOOL_SETTING=", "ANTHROPIC_API_KEY="} {
					if strings.Contains(text, absent) {
						t.Errorf("the agent's environment holds %s, which nothing gives it:\n%s", absent, text)
					}
				}
			}
		})
	}
}

// A Docker exec's environment is the image's own, the allowlist and what the adapter adds: nothing else of orch's.
func TestDockerAgentEnvironment(t *testing.T) {
	environ := orchEnviron()
	d := newTestDocker(t, DockerConfig{Env: AgentEnv(environ, EnvPolicy{Container: true, Agent: "claude"})})
	ws := workspace(t, "")
	res := execOK(t, d, Spec{RunID: newRunID(t, d), TaskID: "1.1", Dir: ws,
		Env: []string{"ORCH_RUN_ID=r-env", "ORCH_TASK_ID=1.1", "ORCH_ATTEMPT=1"}}, "env > env.txt; env")
	file, err := os.ReadFile(ws + "/env.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The image's own: Docker's default PATH, the container's HOSTNAME, and HOME from the user's entry (or /).
	allowed := []string{"PATH", "HOSTNAME", "HOME", "ORCH_RUN_ID", "ORCH_TASK_ID", "ORCH_ATTEMPT", "LANG", "LC_ALL",
		"TERM", "TZ", "https_proxy", "NO_PROXY", "ANTHROPIC_API_KEY", "CLAUDE_CODE_USE_BEDROCK",
		"VERTEX_REGION_CLAUDE_4_6_SONNET", "PWD", "SHLVL"}
	for _, text := range []string{string(res.Stdout), string(file)} {
		got := names(strings.Split(strings.TrimSpace(text), "\n"))
		for _, n := range got {
			if !slices.Contains(allowed, n) {
				t.Errorf("the exec's environment holds %s, which is not on the allowlist:\n%s", n, text)
			}
		}
		for _, want := range []string{"ORCH_TASK_ID=1.1", "ANTHROPIC_API_KEY=sk-ant-agentkey", "LANG=C.UTF-8"} {
			if !strings.Contains(text, want) {
				t.Errorf("the exec's environment lacks %s:\n%s", want, text)
			}
		}
		for _, v := range orchOwn {
			if strings.Contains(text, v) {
				t.Errorf("the exec's environment holds %q", v)
			}
		}
		if strings.Contains(text, "PATH=/usr/local/bin:/usr/bin:/bin\n") || strings.Contains(text, "HOME=/home/orch") {
			t.Errorf("the host's PATH or HOME reached the container:\n%s", text)
		}
	}
}
