package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// orchCredentials is orch's environment on a server: the credentials it acts with. The values are built at run time
// so that this file does not itself look like a leak to a scanner.
func orchCredentials() map[string]string {
	return map[string]string{
		"SLACK_BOT_TOKEN":            "xoxb-" + "1111-2222-" + strings.Repeat("Bq7", 8),
		"SLACK_APP_TOKEN":            "xapp-1-" + strings.Repeat("Ap9x", 6),
		"SLACK_SIGNING_SECRET":       "s1gn" + strings.Repeat("Kq3z", 6),
		"ORCH_WEB_TOKEN":             "w3b-" + strings.Repeat("Tk8m", 5),
		"ORCH_GITHUB_TOKEN":          "ghp_" + strings.Repeat("Gh5r", 9),
		"GITHUB_TOKEN":               "ghs_" + strings.Repeat("Ci4w", 9),
		"ORCH_API_TOKENS":            "alice:" + "ap1-" + strings.Repeat("Al6v", 5),
		"ORCH_GITHUB_WEBHOOK_SECRET": "wh-" + strings.Repeat("Hk2s", 5),
		"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20" + "otl-" + strings.Repeat("Ot3p", 5),
		"ANTHROPIC_API_KEY":          "sk-ant-" + "api03-" + strings.Repeat("An4k", 8),
		// Orch is told to use the embedded store (--redis=) below: this URL's password is a secret it holds all the same.
		"ORCH_REDIS_URL": "redis://:" + "rd5-" + strings.Repeat("Rp8q", 5) + "@127.0.0.1:1/0",
	}
}

// credentialValues are the parts of orchCredentials that are the credentials themselves.
func credentialValues() map[string]string {
	out := map[string]string{}
	for k, v := range orchCredentials() {
		switch k {
		case "ORCH_API_TOKENS":
			_, v, _ = strings.Cut(v, ":")
		case "OTEL_EXPORTER_OTLP_HEADERS":
			_, v, _ = strings.Cut(v, "%20")
		case "ORCH_REDIS_URL":
			v = strings.TrimPrefix(strings.Split(v, "@")[0], "redis://:")
		}
		out[k] = v
	}
	return out
}

func credentialEnv(extra ...string) []string {
	var env []string
	for k, v := range orchCredentials() {
		env = append(env, k+"="+v)
	}
	return append(env, extra...)
}

// stateFiles calls check with every file of the state directory, byte for byte: the journal, the snapshots, the
// history archive.
func stateFiles(t *testing.T, dir string, check func(path string, data []byte)) {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, ".orch"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("reading %s: %v", path, err)
			}
			check(path, data)
			n++
		}
		return nil
	})
	if n == 0 {
		t.Fatal("the state directory holds no file")
	}
}

// An agent that prints its environment and writes it into the work (`env > env.txt`) shows what a program needs, the
// run's own variables and what was passed on purpose, and none of orch's credentials.
func TestAgentEnvironmentIsAnAllowlist(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	os.WriteFile(filepath.Join(dir, "env.md"), []byte("# Env\n\n## Task 1.1: Look around\n\nLook around.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "env.sim.yaml"), []byte("tasks:\n  \"1.1\":\n    - output: \"Done. All tests pass.\"\n"+
		"      sh: \"env > env.txt; env | sed 's/=.*//' | sort | tr '\\\\n' ' '\"\n"), 0o644)
	r := orchEnv(t, dir, credentialEnv("LANG=C.UTF-8", "MY_TOOL_SETTING=on-purpose", "ORCH_AGENT_ENV=MY_TOOL_SETTING",
		"NOT_PASSED=anything"), nil, "run", "--redis=", "--brain", "heuristic", "--agent", "sim", "env.md")
	must(t, r, 0, "Task 1.1: COMPLETED")
	id := runID(t, r)
	file, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ORCH_RUN_ID=" + id + "\n", "ORCH_TASK_ID=1.1\n", "ORCH_ATTEMPT=1\n",
		"PATH=" + os.Getenv("PATH") + "\n", "HOME=", "LANG=C.UTF-8\n", "MY_TOOL_SETTING=on-purpose\n"} {
		if !bytes.Contains(file, []byte(want)) {
			t.Errorf("the agent's environment lacks %q:\n%s", want, file)
		}
	}
	for _, absent := range []string{"NOT_PASSED=", "ORCH_AGENT_ENV=", "ANTHROPIC_API_KEY="} {
		if bytes.Contains(file, []byte(absent)) {
			t.Errorf("the agent's environment holds %s:\n%s", absent, file)
		}
	}
	texts := map[string]string{"env.txt": string(file), "orch run": r.stdout + r.stderr}
	for k := range orchCredentials() {
		if bytes.Contains(file, []byte(k+"=")) {
			t.Errorf("the agent was given %s", k)
		}
	}
	for where, text := range texts {
		for k, v := range credentialValues() {
			if strings.Contains(text, v) {
				t.Errorf("the value of %s is in %s", k, where)
			}
		}
	}
	stateFiles(t, dir, func(path string, data []byte) {
		for k, v := range credentialValues() {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("the value of %s is in %s", k, path)
			}
		}
	})
}

// An agent that prints a secret orch holds, one no pattern recognises (the web token): the run stops on a security
// question that names it, never retried, and its value is nowhere — the terminal, --json, `orch logs` and `orch
// status` of a process that does not hold the secret, the whole state directory.
func TestHeldSecretInAgentOutputIsASecurityQuestion(t *testing.T) {
	t.Parallel()
	token := credentialValues()["ORCH_WEB_TOKEN"]
	for _, format := range []string{"terminal", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := workdir(t)
			os.WriteFile(filepath.Join(dir, "leak.md"), []byte("# Leak\n\n## Task 1.1: Sign in\n\nSign in.\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "leak.sim.yaml"), []byte("tasks:\n  \"1.1\":\n    - output: |\n"+
				"        I signed in to the web view with "+token+" and it worked.\n        Done. All tests pass.\n"), 0o644)
			args := []string{"run", "--redis=", "--brain", "heuristic", "--agent", "sim", "leak.md"}
			if format == "json" {
				args = append(args, "--json")
			}
			r := orchEnv(t, dir, credentialEnv(), nil, args...)
			must(t, r, 3)
			if format == "json" {
				must(t, r, 3, `"trigger":"security"`, "the value of ORCH_WEB_TOKEN")
			} else {
				must(t, r, 3, "NEEDS HUMAN INPUT", "the value of ORCH_WEB_TOKEN")
			}
			st := orch(t, dir, "", "status", "--json")
			id := runID(t, orch(t, dir, "", "status"))
			outputs := map[string]result{"orch run": r, "status": st,
				"logs":              orch(t, dir, "", "logs", id),
				"escalation show":   orch(t, dir, "", "escalation", "show", id, "--json"),
				"escalation log":    orch(t, dir, "", "escalation", "log", id),
				"history --json":    orch(t, dir, "", "history", "--json"),
				"status of the run": orch(t, dir, "", "status", id, "--json")}
			must(t, outputs["escalation show"], 0, "security", "[REDACTED:ORCH_WEB_TOKEN]")
			if s := status(t, dir, id); s["tasks"].([]any)[0].(map[string]any)["started"].(float64) != 1 {
				t.Errorf("the task was started again: %v", s["tasks"])
			}
			for where, o := range outputs {
				if strings.Contains(o.stdout+o.stderr, token) {
					t.Errorf("the token is in the output of %s:\n%s", where, o)
				}
			}
			stateFiles(t, dir, func(path string, data []byte) {
				if bytes.Contains(data, []byte(token)) {
					t.Errorf("the token is in %s", path)
				}
			})
		})
	}
}
