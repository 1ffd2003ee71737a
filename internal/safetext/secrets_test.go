package safetext_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/orchrun/orch/internal/safetext"
)

// Values no pattern knows: a web token orch made up, a signing secret, a password with what JSON and Go escape.
const (
	webToken      = "w3b-t0ken-of-orch"
	signingSecret = "5ign1ng5ecret0fSlack"
	redisPassword = `p<a>s&s"w\o` + "\u00e9rd"
)

func testRedactor() *safetext.Redactor {
	return safetext.NewRedactor([]safetext.Secret{
		{Name: "ORCH_WEB_TOKEN", Value: webToken},
		{Name: "SLACK_SIGNING_SECRET", Value: signingSecret},
		{Name: "ORCH_REDIS_URL", Part: "password", Value: redisPassword},
		{Name: "SHORT", Value: "test"}, // shorter than MinSecretLen: ordinary words would match it
	})
}

// A secret orch holds is taken out by value, as written and as JSON or Go escape it, and named by where it came from.
func TestRedactorRedactsByValue(t *testing.T) {
	t.Parallel()
	r := testRedactor()
	jsonQuoted, _ := json.Marshal(redisPassword)
	goQuoted := strconv.Quote(redisPassword)
	text := "token " + webToken + ", secret " + signingSecret + "; json " + string(jsonQuoted) + "; go " + goQuoted +
		"; raw " + redisPassword + "; a test that tests; " + "ghp_" + strings.Repeat("aB3d", 9)
	got := r.Redact(text)
	for _, v := range []string{webToken, signingSecret, redisPassword, string(jsonQuoted[1 : len(jsonQuoted)-1]),
		goQuoted[1 : len(goQuoted)-1], "aB3daB3d"} {
		if strings.Contains(got, v) {
			t.Errorf("%q is left in %q", v, got)
		}
	}
	for _, want := range []string{"token [REDACTED:ORCH_WEB_TOKEN]", "secret [REDACTED:SLACK_SIGNING_SECRET]",
		`json "[REDACTED:ORCH_REDIS_URL]"`, "raw [REDACTED:ORCH_REDIS_URL]", "a test that tests", "[REDACTED:github-token]"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}

	// Inside JSON, the values go and the JSON stays valid; the patterns are not applied there.
	in, _ := json.Marshal(map[string]string{"command": "curl -H 'X-Token: " + webToken + "' -u u:" + redisPassword,
		"content": "password = example1"})
	out := r.RedactValues(string(in))
	var back map[string]string
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatalf("RedactValues broke the JSON: %v\n%s", err, out)
	}
	if want := "curl -H 'X-Token: [REDACTED:ORCH_WEB_TOKEN]' -u u:[REDACTED:ORCH_REDIS_URL]"; back["command"] != want {
		t.Errorf("command = %q, want %q", back["command"], want)
	}
	if back["content"] != "password = example1" {
		t.Errorf("content = %q: RedactValues applied a pattern", back["content"])
	}

	var none *safetext.Redactor
	if none.Redact("x "+webToken) != "x "+webToken || none.Len() != 0 || none.Find(webToken) != nil {
		t.Error("a nil Redactor knows no value")
	}
	if got := none.Redact("ghp_" + strings.Repeat("aB3d", 9)); got != "[REDACTED:github-token]" {
		t.Errorf("a nil Redactor still redacts by pattern: %q", got)
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d, want 3 (the short value is not looked for)", r.Len())
	}
}

// Find names what text holds, never a value: orch's secrets by where they came from, then the patterns' kinds of
// what is not one of them.
func TestRedactorFind(t *testing.T) {
	t.Parallel()
	r := safetext.NewRedactor([]safetext.Secret{
		{Name: "ORCH_WEB_TOKEN", Value: webToken},
		{Name: "ORCH_REDIS_URL", Part: "password", Value: redisPassword},
		{Name: "SLACK_BOT_TOKEN", Value: "xoxb-" + "2048-4096-" + strings.Repeat("Zq9", 8)},
	})
	for _, c := range []struct {
		text string
		want []string
	}{
		{"nothing here, and a test", nil},
		{"the token is " + webToken, []string{"the value of ORCH_WEB_TOKEN"}},
		{`{"x":"` + strings.ReplaceAll(strings.ReplaceAll(redisPassword, `\`, `\\`), `"`, `\"`) + `"}`,
			[]string{"the password in ORCH_REDIS_URL"}},
		// A value that a pattern also knows is named as orch's own: the person knows which credential to rotate.
		{"bot xoxb-" + "2048-4096-" + strings.Repeat("Zq9", 8), []string{"the value of SLACK_BOT_TOKEN"}},
		{webToken + " and ghp_" + strings.Repeat("aB3d", 9) + " and " + webToken,
			[]string{"the value of ORCH_WEB_TOKEN", "github-token"}},
		// What was redacted already is not found again.
		{"[REDACTED:ORCH_WEB_TOKEN] [REDACTED:github-token]", nil},
	} {
		got := r.Find(c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("Find(%.40q) = %q, want %q", c.text, got, c.want)
		}
		for _, g := range got {
			if strings.Contains(g, webToken) || strings.Contains(g, redisPassword) {
				t.Errorf("Find names a value: %q", g)
			}
		}
	}
	for _, text := range []string{"the token is " + webToken + " and " + "ghp_" + strings.Repeat("aB3d", 9), "nothing"} {
		taken, found := r.Take(text)
		if taken != r.Redact(text) || !slices.Equal(found, r.Find(text)) {
			t.Errorf("Take(%.30q) = %q, %q; want Redact and Find: %q, %q", text, taken, found, r.Redact(text), r.Find(text))
		}
	}
	if got := r.FindValues("password = hunter22 and " + webToken); !slices.Equal(got, []string{"the value of ORCH_WEB_TOKEN"}) {
		t.Errorf("FindValues = %q: want orch's secret alone, not the pattern's find", got)
	}
	// In work a task adds: orch's secrets and credentials by their shape, not a fixture's password.
	work := "DB_PASSWORD=changeme123\nurl: postgres://app:example-pass@db/app\nkey: ghp_" + strings.Repeat("aB3d", 9) +
		"\nweb: " + webToken + "\n"
	if got, want := r.FindInWork(work), []string{"the value of ORCH_WEB_TOKEN", "github-token"}; !slices.Equal(got, want) {
		t.Errorf("FindInWork = %q, want %q", got, want)
	}
	if got := r.FindInWork("password: changeme123\n"); got != nil {
		t.Errorf("FindInWork of a fixture's password = %q", got)
	}
}

// What redaction by value costs on an agent's output at the size orch keeps of it (1 MiB), with as many secrets as a
// server's orch holds with a few passed to the agent.
func BenchmarkRedactor(b *testing.B) {
	var secrets []safetext.Secret
	for i := range 40 {
		secrets = append(secrets, safetext.Secret{Name: "SECRET_" + strconv.Itoa(i), Value: "v4lue-" + strconv.Itoa(i) + "-" + strings.Repeat("k", 20)})
	}
	r := safetext.NewRedactor(secrets)
	text := strings.Repeat("compiling package 42 of 97: ok, all tests pass in 0.31s\n", (1<<20)/56)
	for _, c := range []struct {
		name string
		fn   func(string)
	}{
		{"take", func(s string) { r.Take(s) }},
		{"values", func(s string) { r.RedactValues(s) }},
		{"find values", func(s string) { r.FindValues(s) }},
		{"patterns", func(s string) { safetext.Redact(s) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.fn(text)
			}
		})
	}
}
