package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"},
		{"redis://u:hunter2@127.0.0.1:port/0", "redis://u:***@127.0.0.1:port/0"},              // does not parse
		{"redis://:p@ss/hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"},           // '@' and '/' unescaped
		{"https://ghp_0123456789abcdefghij0123@github.com/o/r", "https://***@github.com/o/r"}, // a token as the user
		{"ssh://git@github.com/o/r", "ssh://git@github.com/o/r"},
		{"redis://127.0.0.1:6379/0?x=a@b", "redis://127.0.0.1:6379/0?x=a@b"},
		{"origin", "origin"},
	} {
		if got := redactURL(c.in); got != c.want {
			t.Errorf("redactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The secrets a process was given are known by value, and taken out of any text: wherever a library quoted them, and
// however a malformed URL was cut.
func TestSecretsScrub(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"SLACK_BOT_TOKEN":            "tok-Hunter2Bot",
		"ORCH_REDIS_URL":             "redis://:p@ss/Hunter2Redis@127.0.0.1:6379/0",
		"ORCH_NOTIFY_WEBHOOK":        "https://hooks.example.com/services/T0/B0/Hunter2Hook",
		"SLACK_API_URL":              "http://u:Hunter2%41pi@[::1/",
		"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20Hunter2Otel,x-written-wrong: Hunter2Wrong",
		"ORCH_API_TOKENS":            "dana:Hunter2ApiDana0123, ci:Hunter2ApiCi01234",
	}
	ss := collectSecrets(func(k string) string { return env[k] }, nil, []string{"status", "--redis", "redis://:Hunter2Flag@h:1/0", "--repo=https://u:Hunter2Repo@h/r"})
	text := `parse "redis://:p@ss/Hunter2Redis@127.0.0.1:6379/0": path /Hunter2Redis@127.0.0.1; token tok-Hunter2Bot; ` +
		`Post "https://hooks.example.com/services/T0/B0/Hunter2Hook": refused; "http://u:Hunter2%41pi@[::1/" and Hunter2Api; ` +
		`Bearer Hunter2Otel; x-written-wrong: Hunter2Wrong; Hunter2Flag; Hunter2Repo; Bearer Hunter2ApiDana0123 Hunter2ApiCi01234`
	got := ss.scrub(text)
	if strings.Contains(got, "Hunter2") {
		t.Fatalf("a secret is left in %q", got)
	}
	if !strings.Contains(got, "127.0.0.1") || !strings.Contains(got, "hooks.example.com") {
		t.Fatalf("scrubbing took more than the secrets: %q", got)
	}
	if short := (secrets{}); short.scrub("a b c") != "a b c" {
		t.Fatal("no secrets, no change")
	}
	var tiny secrets
	tiny.add("X", "", "abc") // shorter than minSecret: it would take ordinary words with it
	if len(tiny) != 0 {
		t.Fatalf("a %d-character value was taken for a secret", len("abc"))
	}
}

// The log takes the secrets out of its message and of every attribute, errors, groups and attributes given before
// included.
func TestScrubHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ss := secrets{{Name: "X", Value: "Hunter2Log"}}
	log := slog.New(scrubHandler{slog.NewJSONHandler(&buf, nil), ss}).With("url", "redis://:Hunter2Log@h")
	log.Warn("dialing Hunter2Log", "err", errors.New("refused Hunter2Log"), slog.Group("g", "k", "v Hunter2Log"))
	log.WithGroup("grp").Error("x", "s", "Hunter2Log")
	if strings.Contains(buf.String(), "Hunter2Log") {
		t.Fatalf("the log holds the secret:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"msg":"dialing ***"`) {
		t.Fatalf("the log line was lost:\n%s", buf.String())
	}
}
