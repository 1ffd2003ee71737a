package main

import (
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
)

// secretCorpus is real-looking credentials of the kinds agents leak. They are built at run time so that this file
// does not itself look like a leak to a scanner.
func secretCorpus() map[string]string {
	return map[string]string{
		"aws-key":     "AKIA" + "Z7Q2VX4LMN8PRT5W",
		"aws-secret":  "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY1",
		"github":      "ghp_" + strings.Repeat("aB3d", 9),
		"slack":       "xoxb-" + "2048-4096-" + strings.Repeat("Zq9", 8),
		"anthropic":   "sk-ant-" + "api03-" + strings.Repeat("Xy7_", 10),
		"private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + strings.Repeat("q8Lm", 12) + "\n-----END RSA PRIVATE KEY-----",
		"url":         "postgres://deploy:" + "Tr0ub4dor-and-3" + "@db.internal:5432/app",
		"password":    "DB_PASSWORD=" + "correct-horse-battery",
	}
}

// secretValue is the part of a corpus entry that must never appear: the credential itself, not its label.
func secretValue(kind, s string) string {
	switch kind {
	case "aws-secret":
		return "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY1"
	case "url":
		return "Tr0ub4dor-and-3"
	case "password":
		return "correct-horse-battery"
	case "private-key":
		return strings.Repeat("q8Lm", 12)
	}
	return s
}

// A run whose agent prints every kind of secret, and a human who pastes one into an answer: after the run, the raw
// secrets are nowhere — not in the output, the --json events, the state files, the status, the escalation, the audit.
func TestSecretsAppearNowhere(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	corpus := secretCorpus()
	var leak strings.Builder
	leak.WriteString("I deployed with these credentials:\n")
	for _, s := range corpus {
		leak.WriteString(s + "\n")
	}
	leak.WriteString("QUESTION: Should I commit them?\nOPTIONS:\nA) Yes\nB) No\n")
	scenario := "tasks:\n  \"1.1\":\n    - output: |\n"
	for _, line := range strings.Split(leak.String(), "\n") {
		scenario += "        " + line + "\n"
	}
	os.WriteFile(filepath.Join(dir, "leak.sim.yaml"), []byte(scenario), 0o644)
	os.WriteFile(filepath.Join(dir, "leak.md"), []byte("# Leak\n\n## Task 1.1: Deploy\n\nDeploy it.\n"), 0o644)

	// Every event logged (debug) and every span exported: neither may carry a secret either.
	sink := &otlpSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	env := []string{"ORCH_LOG_LEVEL=debug", "ORCH_LOG_FORMAT=json", "OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL}
	r := orchEnv(t, dir, env, nil, "run", "--json", "--agent", "sim", "leak.md")
	must(t, r, 3, `"trigger":"security"`)
	if !strings.Contains(r.stderr, `"msg":"escalation"`) {
		t.Fatalf("the events were not logged:\n%s", r.stderr)
	}
	id := runID(t, orch(t, dir, "", "status"))
	pasted := corpus["github"]
	ans := orchEnv(t, dir, env, nil, "escalation", "resolve", id, "--answer", "rotated "+pasted+", go on")
	must(t, ans, 0)
	outputs := []result{r, ans,
		orch(t, dir, "", "status", id, "--json"),
		orch(t, dir, "", "escalation", "show", id, "--json"),
		orch(t, dir, "", "escalation", "log", id, "--json"),
		orch(t, dir, "", "history", "--json")}
	check := func(where, text string) {
		t.Helper()
		for kind, s := range corpus {
			if v := secretValue(kind, s); strings.Contains(text, v) {
				t.Errorf("%s secret found in %s", kind, where)
			}
		}
	}
	for i, o := range outputs {
		check("command output "+string(rune('0'+i)), o.stdout+o.stderr)
	}
	sink.mu.Lock()
	if len(sink.spans) == 0 {
		t.Fatal("no spans were exported")
	}
	for _, s := range sink.spans {
		check("span "+s.Name, prototext.Format(s))
	}
	sink.mu.Unlock()
	filepath.WalkDir(filepath.Join(dir, ".orch"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			check(path, string(data))
		}
		return nil
	})
	// The escalation says what leaked, so a person knows what to rotate.
	must(t, outputs[2], 0, "aws-access-key", "github-token", "private-key")
}

// A secret written into a plan — a milestone's task or a pipeline's prompt — is redacted before the run keeps it.
func TestSecretsInPlansAreRedacted(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	corpus := secretCorpus()
	os.WriteFile(filepath.Join(dir, "p.md"), []byte("# P\n\n## Task 1.1: Deploy\n\nUse the token "+corpus["slack"]+" to post.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "p.dot"), []byte(`digraph p {
  start [shape=Mdiamond]; exit [shape=Msquare]
  deploy [shape=box, prompt="Use the key `+corpus["anthropic"]+` to call the API"]
  start -> deploy -> exit
}`), 0o644)
	for _, plan := range []string{"p.md", "p.dot"} {
		os.WriteFile(filepath.Join(dir, strings.TrimSuffix(plan, filepath.Ext(plan))+".sim.yaml"), []byte("default:\n  - output: \"Done.\"\n"), 0o644)
		r := orch(t, dir, "", "run", "--agent", "sim", plan)
		must(t, r, 0)
		st := orch(t, dir, "", "status", runID(t, r), "--json")
		for _, kind := range []string{"slack", "anthropic"} {
			if strings.Contains(st.stdout, corpus[kind]) {
				t.Errorf("%s: the %s secret is in the run's state", plan, kind)
			}
		}
	}
	filepath.WalkDir(filepath.Join(dir, ".orch"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			for _, kind := range []string{"slack", "anthropic"} {
				if strings.Contains(string(data), corpus[kind]) {
					t.Errorf("the %s secret is in %s", kind, path)
				}
			}
		}
		return nil
	})
}

// A question nobody could answer is in the audit trail too.
func TestUnansweredQuestionIsAudited(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	r := orch(t, dir, "", "run", "--agent", "sim", "examples/plans/ambiguous_task.md")
	must(t, r, 3)
	must(t, orch(t, dir, "", "escalation", "log", runID(t, r)), 0, "asked", "SKIPPED")
}
