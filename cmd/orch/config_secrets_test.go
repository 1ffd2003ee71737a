package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every setting that can carry a credential, fed a value orch refuses or cannot use with a known secret inside: the
// secret is in no output of any command that reads the setting (the error, the log at debug level in JSON, orch
// health's table), each command fails as it should, and nothing was written: no run in the store afterwards.
func TestSecretsInBadSettingsAppearNowhere(t *testing.T) {
	t.Parallel()
	const secret = "Hunter2Secret"
	closed := closedPort(t)
	commands := map[string][]string{
		"run":     {"run", "--agent", "sim", "examples/plans/hello.md"},
		"task":    {"task", "--agent", "sim", "examples/plans/hello.md", "1.1"},
		"detach":  {"run", "--detach", "--agent", "sim", "examples/plans/hello.md"},
		"resume":  {"resume", "r-aaaaaaaaaa"},
		"resolve": {"escalation", "resolve", "r-aaaaaaaaaa", "--retry"},
		"status":  {"status"},
		"serve":   {"serve", "--sandbox", "local"},
		"bot":     {"bot"},
		"worker":  {"worker", "--sandbox", "local"},
		"web":     {"web", "--addr", "0.0.0.0:0"},
		"health":  {"health", "--agent", "sim"},
	}
	every := []string{"run", "task", "detach", "resume", "resolve", "status", "serve", "bot", "worker", "web", "health"}
	runs := []string{"run", "task", "detach", "serve", "worker"}
	// The long-running commands stop at the Redis they cannot reach, after every check of their settings.
	unreachable := "ORCH_REDIS_URL=redis://" + closed + "/0"
	cases := []struct {
		name string
		env  []string
		flag []string // added to each command's arguments
		yaml string   // orch.yaml
		cmds []string
		code int // the exit code of each command; -1: any failure
	}{
		{name: "ORCH_REDIS_URL bad port", env: []string{"ORCH_REDIS_URL=redis://:" + secret + "@127.0.0.1:port/0"}, cmds: every, code: 2},
		{name: "ORCH_REDIS_URL bad escape", env: []string{"ORCH_REDIS_URL=redis://u:" + secret + "%zz@127.0.0.1:6379/0"}, cmds: every, code: 2},
		{name: "ORCH_REDIS_URL unescaped slash", env: []string{"ORCH_REDIS_URL=redis://:p@ss/" + secret + "@127.0.0.1:6379/0"}, cmds: every, code: 2},
		{name: "ORCH_REDIS_URL space", env: []string{"ORCH_REDIS_URL=redis://:" + secret + " x@127.0.0.1:6379/0"}, cmds: every, code: 2},
		{name: "ORCH_REDIS_URL unreachable", env: []string{"ORCH_REDIS_URL=redis://:" + secret + "@" + closed + "/0"}, cmds: every, code: -1},
		{name: "--redis", flag: []string{"--redis", "redis://u:" + secret + "@[::1/0"}, cmds: every, code: 2},
		{name: "orch.yaml redis", yaml: "redis: redis://:" + secret + "@127.0.0.1:port/0\n", cmds: every, code: 2},
		{name: "ORCH_REPO", env: []string{"ORCH_REPO=https://x-access-token:" + secret + "@[github.com/o/r.git"}, cmds: every, code: 2},
		{name: "--repo", flag: []string{"--repo", "https://u:" + secret + "@[::1/r.git"}, cmds: runs, code: 2},
		{name: "orch.yaml git.repo", yaml: "git:\n  repo: https://u:" + secret + "@[::1/r.git\n", cmds: every, code: 2},
		{name: "ORCH_GIT_PUSH", env: []string{"ORCH_GIT_PUSH=https://u:" + secret + "@[::1/r.git"}, cmds: every, code: 2},
		{name: "SLACK_API_URL malformed", env: []string{"SLACK_API_URL=http://u:" + secret + "@[::1/api/"}, cmds: every, code: 2},
		{name: "SLACK_API_URL unreachable", env: []string{"SLACK_API_URL=http://u:" + secret + "@" + closed + "/api/"},
			cmds: []string{"serve", "bot", "health"}, code: -1},
		{name: "ORCH_GITHUB_API_URL scheme", env: []string{"ORCH_GITHUB_TOKEN=t0ken-for-test", "ORCH_GITHUB_API_URL=ftp://u:" + secret + "@x/"}, cmds: every, code: 2},
		{name: "ORCH_GITHUB_API_URL malformed", env: []string{"ORCH_GITHUB_TOKEN=t0ken-for-test", "ORCH_GITHUB_API_URL=http://u:" + secret + "@[::1/"}, cmds: every, code: 2},
		{name: "OTEL_EXPORTER_OTLP_ENDPOINT", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://u:" + secret + "@[::1/"}, cmds: every, code: 2},
		{name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://u:" + secret + "@[::1/v1/traces"}, cmds: every, code: 2},
		{name: "OTEL_EXPORTER_OTLP_HEADERS", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + closed, "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20" + secret + "%zz"},
			cmds: []string{"health"}, code: -1},
		{name: "ORCH_NOTIFY_WEBHOOK", env: []string{"ORCH_NOTIFY_WEBHOOK=https://hooks.example.com:hook/services/" + secret}, cmds: every, code: 2},
		{name: "SLACK_BOT_TOKEN", env: []string{"SLACK_BOT_TOKEN=xoxb-" + secret + "\nsecond line"}, cmds: every, code: 2},
		{name: "SLACK_APP_TOKEN", env: []string{"SLACK_APP_TOKEN=xapp-1-" + secret + " trailing"}, cmds: every, code: 2},
		{name: "SLACK_APP_TOKEN refused by Slack", env: []string{"SLACK_APP_TOKEN=xapp-1-" + secret}, cmds: []string{"serve", "bot"}, code: 2},
		{name: "SLACK_SIGNING_SECRET", env: []string{"SLACK_SIGNING_SECRET=" + secret + "\t"}, cmds: every, code: 2},
		{name: "ORCH_WEB_TOKEN", env: []string{"ORCH_WEB_TOKEN= " + secret}, cmds: every, code: 2},
		{name: "ORCH_WEB_TOKEN unused", env: []string{"ORCH_WEB_TOKEN=" + secret, unreachable}, cmds: []string{"web", "serve"}, code: 2},
		{name: "ANTHROPIC_API_KEY", env: []string{"ANTHROPIC_API_KEY=sk-" + secret + "\n"}, cmds: every, code: 2},
		{name: "ANTHROPIC_API_KEY unused", env: []string{"ANTHROPIC_API_KEY=sk-" + secret}, flag: []string{"--brain", "anthropic"},
			cmds: []string{"health"}, code: 1},
		{name: "ORCH_GITHUB_TOKEN", env: []string{"ORCH_GITHUB_TOKEN=ghp_" + secret + " \n"}, cmds: every, code: 2},
		{name: "GITHUB_TOKEN", env: []string{"GITHUB_TOKEN=" + secret + "\r\n"}, cmds: every, code: 2},
	}
	// What every command is given: Slack settings that pass the checks and a Slack that does not answer, logs at their
	// most talkative.
	// The services wait for Redis and Slack at start: here they give up after a moment, as a service whose operator
	// set ORCH_START_TIMEOUT does.
	base := []string{"ORCH_START_TIMEOUT=1s", "ORCH_LOG_LEVEL=debug", "ORCH_LOG_FORMAT=json", "ORCH_BRAIN=heuristic", "ORCH_HTTP_ADDR=127.0.0.1:0",
		"SLACK_BOT_TOKEN=xoxb-test-token", "SLACK_SIGNING_SECRET=test-signing", "SLACK_APP_TOKEN=",
		"SLACK_API_URL=http://" + closed + "/api/", "ORCH_WEB_TOKEN=", "ORCH_NOTIFY_WEBHOOK=", "OTEL_EXPORTER_OTLP_ENDPOINT=",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_EXPORTER_OTLP_HEADERS=", "ORCH_GITHUB_API_URL=", "ORCH_SANDBOX="}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := workdir(t)
			if c.yaml != "" {
				if err := os.WriteFile(filepath.Join(dir, "orch.yaml"), []byte(c.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range c.cmds {
				args := commands[name]
				args = append(append(args[:1:1], c.flag...), args[1:]...)
				env := append([]string{}, base...)
				if (name == "worker" || name == "web") && !strings.Contains(c.yaml, "redis:") {
					env = append(env, unreachable) // the case's own ORCH_REDIS_URL, after it, wins
				}
				env = append(env, c.env...)
				r := orchEnv(t, dir, env, nil, args...)
				if r.code == 0 || (c.code > 0 && r.code != c.code) {
					t.Errorf("orch %s: want exit %d, got %s", strings.Join(args, " "), c.code, r)
				}
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Errorf("orch %s printed the secret:\n%s", strings.Join(args, " "), r)
				}
			}
			if c.yaml != "" {
				os.Remove(filepath.Join(dir, "orch.yaml"))
			}
			must(t, orchEnv(t, dir, base, nil, "history"), 0, "No runs yet.")
		})
	}
}

// A run that clones keeps its repository's URL whole, so that any worker can clone it; what orch prints of the run
// shows it without its password, in JSON as in text.
func TestACloneURLsPasswordIsNotPrinted(t *testing.T) {
	t.Parallel()
	const secret = "Hunter2Clone"
	dir := workdir(t)
	repo := fmt.Sprintf("https://u:%s@%s/r.git", secret, closedPort(t))
	r := orchEnv(t, dir, []string{"ORCH_BRAIN=heuristic", "ORCH_REPO=" + repo}, nil, "run", "--json", "--agent", "sim", "examples/plans/hello.md")
	must(t, r, 3) // the clone fails: a configuration escalation
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"history", "--json"}, {"escalation", "show", "--json"}} {
		out := orch(t, dir, "", args...)
		if out.code != 0 || strings.Contains(out.stdout+out.stderr, secret) {
			t.Errorf("orch %s: want exit 0 and no password, got %s", strings.Join(args, " "), out)
		}
	}
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("orch run printed the password:\n%s", r)
	}
}
