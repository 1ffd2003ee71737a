package safetext_test

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/orchrun/orch/internal/safetext"
)

// Sizes Bound is used at across orch (escalation's limits on an output, an error, a question).
const (
	maxOutput   = 16 << 10
	maxError    = 4 << 10
	maxQuestion = 8 << 10
)

// The secrets below are assembled at run time from fragments so that this file does not itself trip secret scanners.

const (
	upperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	alnumChars  = "aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uVwXyZ"
	urlChars    = alnumChars + "-_"
	hexChars    = "0123456789abcdef"
	b64Chars    = alnumChars + "+/"
)

// chars is n characters of set, shuffled deterministically (seed picks the start).
func chars(set string, n, seed int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[(i*7+seed*13+3)%len(set)]
	}
	return string(b)
}

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func pem(kind string, lines int) (block, line string) {
	var body []string
	for i := 0; i < lines; i++ {
		body = append(body, chars(b64Chars, 64, i))
	}
	begin, end := "-----BEGIN ", "-----END "
	label := strings.TrimSpace(kind+" PRIVATE") + " KEY-----"
	return begin + label + "\n" + strings.Join(body, "\n") + "\n" + end + label, body[1]
}

type secretCase struct {
	name   string
	text   string // how the secret appears
	secret string // what must not survive
	kind   string // what Secrets must name
	token  bool   // a bare token: also tried inside common surroundings
}

func secretCorpus() []secretCase {
	akia := "AK" + "IA" + chars(upperDigits, 16, 1)
	asia := "AS" + "IA" + chars(upperDigits, 16, 2)
	awsSecret := chars(b64Chars, 40, 3)
	rsa, rsaLine := pem("RSA", 6)
	ssh, sshLine := pem("OPENSSH", 6)
	ec, ecLine := pem("EC", 3)
	pkcs8, pkcs8Line := pem("", 8)
	enc, encLine := pem("ENCRYPTED", 8)
	truncated, truncLine := pem("RSA", 4)
	truncated = truncated[:strings.Index(truncated, "-----END")]
	saJSON := strings.ReplaceAll(pkcs8, "\n", `\n`)
	ghp := "gh" + "p_" + chars(alnumChars, 36, 4)
	gho := "gh" + "o_" + chars(alnumChars, 36, 5)
	ghs := "gh" + "s_" + chars(alnumChars, 36, 6)
	pat := "github" + "_pat_" + chars(alnumChars, 22, 7) + "_" + chars(alnumChars, 59, 8)
	xoxb := "xo" + "xb-" + "2345678901-2345678901234-" + chars(alnumChars, 24, 9)
	xoxp := "xo" + "xp-" + "2345678901-2345678901-2345678901234-" + chars(hexChars, 32, 10)
	xapp := "xa" + "pp-1-" + "A012BCDEF34-2345678901234-" + chars(hexChars, 64, 11)
	ant := "sk" + "-ant-api03-" + chars(urlChars, 93, 12) + "AA"
	oai := "sk" + "-" + chars(alnumChars, 48, 13)
	proj := "sk" + "-proj-" + chars(urlChars, 120, 14) + "A"
	aiza := "AI" + "za" + chars(alnumChars, 34, 15) + "Q"
	aizaDash := "AI" + "za" + chars(alnumChars, 34, 16) + "-"
	stripe := "sk" + "_live_" + chars(alnumChars, 24, 17)
	stripeR := "rk" + "_live_" + chars(alnumChars, 24, 18)
	stripeT := "sk" + "_test_" + chars(alnumChars, 24, 19)
	jwt := b64url(`{"alg":"HS256","typ":"JWT"}`) + "." + b64url(`{"sub":"1234567890","name":"Jane Roe","iat":1516239022}`) +
		"." + chars(urlChars, 42, 20) + "c"
	pw := "c0rrect-h0rse" + "-battery-staple"

	return []secretCase{
		{name: "aws access key id", text: akia, secret: akia, kind: "aws-access-key", token: true},
		{name: "aws temporary access key id", text: asia, secret: asia, kind: "aws-access-key", token: true},
		{name: "aws credentials file", text: "[default]\naws_access_key_id = " + akia + "\naws_secret_access_key = " + awsSecret + "\n",
			secret: awsSecret, kind: "aws-secret"},
		{name: "aws secret env", text: "export AWS_SECRET_ACCESS_KEY=" + awsSecret, secret: awsSecret, kind: "aws-secret"},
		{name: "aws secret yaml", text: "aws_secret_access_key: '" + awsSecret + "'", secret: awsSecret, kind: "aws-secret"},
		{name: "aws secret json", text: `{"aws_secret_access_key": "` + awsSecret + `"}`, secret: awsSecret, kind: "aws-secret"},
		{name: "rsa private key", text: "key:\n" + rsa + "\nnext", secret: rsaLine, kind: "private-key"},
		{name: "openssh private key", text: ssh, secret: sshLine, kind: "private-key"},
		{name: "ec private key", text: ec, secret: ecLine, kind: "private-key"},
		{name: "pkcs8 private key", text: pkcs8, secret: pkcs8Line, kind: "private-key"},
		{name: "encrypted private key", text: enc, secret: encLine, kind: "private-key"},
		{name: "private key cut off", text: "cat id_rsa\n" + truncated, secret: truncLine, kind: "private-key"},
		{name: "private key in service account json", text: `{"type": "service_account", "private_key": "` + saJSON + `"}`,
			secret: chars(b64Chars, 64, 1), kind: "private-key"},
		{name: "github classic token", text: ghp, secret: ghp, kind: "github-token", token: true},
		{name: "github oauth token", text: gho, secret: gho, kind: "github-token", token: true},
		{name: "github actions token", text: ghs, secret: ghs, kind: "github-token", token: true},
		{name: "github fine-grained token", text: pat, secret: pat, kind: "github-token", token: true},
		{name: "slack bot token", text: xoxb, secret: xoxb, kind: "slack-token", token: true},
		{name: "slack user token", text: xoxp, secret: xoxp, kind: "slack-token", token: true},
		{name: "slack app token", text: xapp, secret: xapp, kind: "slack-app-token", token: true},
		{name: "anthropic key", text: ant, secret: ant, kind: "anthropic-key", token: true},
		{name: "openai key", text: oai, secret: oai, kind: "openai-key", token: true},
		{name: "openai project key", text: proj, secret: proj, kind: "openai-key", token: true},
		{name: "google api key", text: aiza, secret: aiza, kind: "google-api-key", token: true},
		{name: "google api key ending in a dash", text: aizaDash, secret: aizaDash, kind: "google-api-key", token: true},
		{name: "stripe secret key", text: stripe, secret: stripe, kind: "stripe-key", token: true},
		{name: "stripe restricted key", text: stripeR, secret: stripeR, kind: "stripe-key", token: true},
		{name: "stripe test key", text: stripeT, secret: stripeT, kind: "stripe-key", token: true},
		{name: "jwt", text: jwt, secret: jwt, kind: "jwt", token: true},
		{name: "postgres url", text: "DATABASE_URL=postgres://app:" + pw + "@db.internal:5432/app?sslmode=require",
			secret: pw, kind: "url-password"},
		{name: "mysql url", text: "mysql://root:" + pw + "@localhost/shop", secret: pw, kind: "url-password"},
		{name: "mongodb+srv url", text: "mongodb+srv://admin:" + pw + "@cluster0.ab12c.mongodb.net/?retryWrites=true",
			secret: pw, kind: "url-password"},
		{name: "git https url", text: "fatal: unable to access 'https://alice:" + pw + "@git.example.com/org/repo.git/'",
			secret: pw, kind: "url-password"},
		{name: "amqp url", text: "amqp://guest:" + pw + "@rabbit:5672/", secret: pw, kind: "url-password"},
		{name: "redis url with user", text: "redis://default:" + pw + "@cache:6379/0", secret: pw, kind: "url-password"},
		{name: "redis url without user", text: "ORCH_REDIS_URL=redis://:" + pw + "@cache:6379/0", secret: pw, kind: "url-password"},
		{name: "password=", text: "login with password=" + pw + " failed", secret: pw, kind: "password-assignment"},
		{name: "PASSWORD:", text: "PASSWORD: " + pw, secret: pw, kind: "password-assignment"},
		{name: "yaml password", text: "db:\n  user: app\n  password: '" + pw + "'\n", secret: pw, kind: "password-assignment"},
		{name: "passwd quoted", text: `passwd="` + pw + `"`, secret: pw, kind: "password-assignment"},
		{name: "cli flag", text: "mysql -u root --password=" + pw + " shop", secret: pw, kind: "password-assignment"},
		{name: "secret=", text: "secret = " + pw, secret: pw, kind: "password-assignment"},
		{name: "api_key=", text: "api_key='" + pw + "'", secret: pw, kind: "password-assignment"},
		{name: "access_token:", text: "access_token: " + pw, secret: pw, kind: "password-assignment"},
		{name: "auth_token=", text: "AUTH_TOKEN=" + pw, secret: pw, kind: "password-assignment"},
		{name: "prefixed env password", text: "DB_PASSWORD=" + pw, secret: pw, kind: "password-assignment"},
		{name: "json password", text: `{"user": "app", "password": "` + pw + `"}`, secret: pw, kind: "password-assignment"},
	}
}

// surroundings a bare token is commonly found in; %s is the token.
var surroundings = []string{
	"%s",
	"the token is %s.",
	"TOKEN=%s\n",
	"export TOKEN='%s'",
	`{"token":"%s","ok":true}`,
	"Authorization: Bearer %s\r\n",
	"(%s)",
}

func TestRedactSecrets(t *testing.T) {
	for _, tc := range secretCorpus() {
		texts := []string{tc.text}
		if tc.token {
			texts = texts[:0]
			for _, s := range surroundings {
				texts = append(texts, fmt.Sprintf(s, tc.text))
			}
		}
		t.Run(tc.name, func(t *testing.T) {
			for _, text := range texts {
				out := safetext.Redact(text)
				if strings.Contains(out, tc.secret) {
					t.Errorf("Redact(%.60q…) keeps the secret:\n%s", text, out)
				}
				if !strings.Contains(out, "[REDACTED") {
					t.Errorf("Redact(%.60q…) has no marker: %q", text, out)
				}
				if kinds := safetext.Secrets(text); !slices.Contains(kinds, tc.kind) {
					t.Errorf("Secrets(%.60q…) = %q, want %s", text, kinds, tc.kind)
				}
				if again := safetext.Redact(out); again != out {
					t.Errorf("Redact is not idempotent:\n%q\n%q", out, again)
				}
			}
		})
	}
}

// The text around a secret stays readable: a person must still understand the error.
func TestRedactKeepsContext(t *testing.T) {
	ghp := "gh" + "p_" + chars(alnumChars, 36, 4)
	pw := "s3cr3t" + "-passw0rd"
	tests := []struct{ in, want string }{
		{"push failed with " + ghp + " (403)", "push failed with [REDACTED:github-token] (403)"},
		{"postgres://app:" + pw + "@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"},
		{"password = " + pw + " is wrong", "password=[REDACTED:password-assignment] is wrong"},
		{"A " + ghp + " and a " + ghp, "A [REDACTED:github-token] and a [REDACTED:github-token]"},
	}
	for _, tt := range tests {
		if got := safetext.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
		}
	}
}

func ordinaryCorpus() []string {
	return []string{
		"",
		"commit 3f786850e387550fdab836ed7e6dc881de23001b fixes #12",
		"HEAD is now at 3f78685 add cache",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"request id 123e4567-e89b-12d3-a456-426614174000",
		"payload " + base64.StdEncoding.EncodeToString([]byte("hello world")) + " and " +
			base64.StdEncoding.EncodeToString([]byte("orch")),
		"password must be 8 chars",
		"the password field is required; see the docs",
		"Reset your password: see the docs",
		"the secret sauce is caching",
		"api_key is required",
		"token=abc",
		"https://github.com/orchrun/orch/pull/12",
		"http://localhost:8080/health",
		"postgres://localhost:5432/app",
		"git@github.com:orchrun/orch.git",
		"ssh://git@github.com/orchrun/orch.git",
		"github.com/redis/go-redis/v9@v9.23.0",
		"write to alice@example.com",
		"AKIA is the prefix of AWS access key ids",
		"pip install scikit-learn; see sk-learn docs",
		"task-ant-colony-simulation-for-the-whole-project-plan",
		"xoxb- tokens are for bots",
		"the header starts with eyJhbGciOi",
		`C:\Users\alice\AppData`,
		"Go 1.26 at 12:34:56, 3 tests failed",
		"日本語のテキストと絵文字 🙂",
	}
}

func TestRedactLeavesOrdinaryTextAlone(t *testing.T) {
	for _, s := range ordinaryCorpus() {
		t.Run(s, func(t *testing.T) {
			if got := safetext.Redact(s); got != s {
				t.Errorf("Redact changed ordinary text:\n%q\n%q", s, got)
			}
			if kinds := safetext.Secrets(s); len(kinds) != 0 {
				t.Errorf("Secrets = %q, want none", kinds)
			}
		})
	}
}

// Redacted text goes on: into guidance in the agent's next prompt, into Slack. When the agent echoes it, the worker
// runs Secrets over the agent's output: a redaction marker must not look like a secret, or the echo alone opens a
// security safetext.
func TestRedactedTextIsNotASecret(t *testing.T) {
	pw := "c0rrect-h0rse" + "-battery-staple"
	for _, s := range []string{
		"postgres://app:" + pw + "@db:5432/app",
		"password=" + pw,
		"aws_secret_access_key = " + chars(b64Chars, 40, 3),
		"gh" + "p_" + chars(alnumChars, 36, 4),
	} {
		out := safetext.Redact(s)
		if kinds := safetext.Secrets(out); len(kinds) != 0 {
			t.Errorf("Secrets(%q) = %q, want none", out, kinds)
		}
	}
}

var markerRE = regexp.MustCompile(`\n…\[(\d+) bytes cut\]…\n`)

// boundProblem says what is wrong with Bound(s, n) for an s longer than n, or "".
func boundProblem(s string, n int) string {
	out := safetext.Bound(s, n)
	if len(out) > n {
		return fmt.Sprintf("Bound(%d bytes, %d) is %d bytes", len(s), n, len(out))
	}
	if utf8.ValidString(s) && !utf8.ValidString(out) {
		return fmt.Sprintf("Bound(%d bytes, %d) is not valid UTF-8: …%q…", len(s), n,
			out[max(0, len(out)/2-8):min(len(out), len(out)/2+8)])
	}
	loc := markerRE.FindStringSubmatchIndex(out)
	if loc == nil {
		return fmt.Sprintf("Bound(%d bytes, %d) has no marker", len(s), n)
	}
	head, tail := out[:loc[0]], out[loc[1]:]
	if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		return fmt.Sprintf("Bound(%d bytes, %d): head or tail is not the input's", len(s), n)
	}
	cut, _ := strconv.Atoi(out[loc[2]:loc[3]])
	if cut != len(s)-len(head)-len(tail) {
		return fmt.Sprintf("Bound(%d bytes, %d): marker says %d bytes cut, %d were", len(s), n, cut, len(s)-len(head)-len(tail))
	}
	// Each side may give up a partial rune (and the tail take the head's): the cut stays in the middle.
	if d := len(head) - len(tail); d > 2*utf8.UTFMax || d < -2*utf8.UTFMax {
		return fmt.Sprintf("Bound(%d bytes, %d): head %d and tail %d bytes, want the middle cut", len(s), n, len(head), len(tail))
	}
	if len(out) < n-2*utf8.UTFMax {
		return fmt.Sprintf("Bound(%d bytes, %d) is %d bytes: cut more than needed", len(s), n, len(out))
	}
	return ""
}

// boundChecker reports the first few problems of many Bound calls, then how many there were in all.
type boundChecker struct {
	t        *testing.T
	problems int
}

func (c *boundChecker) check(s string, n int) {
	c.t.Helper()
	if p := boundProblem(s, n); p != "" {
		c.problems++
		if c.problems <= 3 {
			c.t.Error(p)
		}
	}
}

func (c *boundChecker) done() {
	if c.problems > 3 {
		c.t.Errorf("… %d problems in all", c.problems)
	}
}

func TestBound(t *testing.T) {
	t.Run("short input unchanged", func(t *testing.T) {
		for _, s := range []string{"", "a", "日本", strings.Repeat("x", 100)} {
			if got := safetext.Bound(s, 100); got != s {
				t.Errorf("Bound(%q, 100) = %q", s, got)
			}
		}
	})
	t.Run("sizes", func(t *testing.T) {
		tests := []struct{ size, n int }{
			{101, 100}, {150, 100}, {10000, 100}, {4097, maxError},
			{maxOutput + 1, maxOutput}, {maxOutput + 1000, maxOutput},
			{maxOutput * 10, maxOutput}, {1 << 20, maxQuestion},
		}
		for _, tt := range tests {
			s := chars(alnumChars, tt.size, tt.n)
			// ASCII leaves no partial rune to drop: only room kept for the marker's count may go unused.
			slack := len(strconv.Itoa(tt.size))
			if out := safetext.Bound(s, tt.n); len(out) > tt.n || len(out) < tt.n-slack {
				t.Errorf("Bound(%d bytes, %d) is %d bytes, want %d (or up to %d less)", tt.size, tt.n, len(out), tt.n, slack)
			}
			if p := boundProblem(s, tt.n); p != "" {
				t.Error(p)
			}
		}
	})
	// The bytes cut can have one digit more than the bytes beyond n: the marker must not push the result over n.
	t.Run("marker gains a digit", func(t *testing.T) {
		for _, tt := range []struct{ size, n int }{{105, 100}, {maxOutput + 80, maxOutput},
			{maxError + 990, maxError}} {
			if p := boundProblem(strings.Repeat("a", tt.size), tt.n); p != "" {
				t.Error(p)
			}
		}
	})
	t.Run("every size around a limit", func(t *testing.T) {
		c := boundChecker{t: t}
		for size := 1001; size < 1300; size++ {
			c.check(chars(alnumChars, size, size), 1000)
		}
		c.done()
	})
	t.Run("multi-byte runes at the cut", func(t *testing.T) {
		c := boundChecker{t: t}
		for _, r := range []string{"é", "日", "🙂", "aé日🙂"} {
			for _, n := range []int{64, 100, 101, 102, 103, 1000, maxError} {
				for extra := 1; extra < 12; extra++ {
					s := strings.Repeat(r, (n+extra)/len(r)+1)
					c.check(s, n)
					c.check("x"+s, n)
					c.check(s+"xy", n)
				}
			}
		}
		c.done()
	})
	t.Run("smaller than the marker", func(t *testing.T) {
		for _, s := range []string{strings.Repeat("x", 50), strings.Repeat("é", 50), strings.Repeat("🙂", 50)} {
			for n := 1; n < 20; n++ {
				out := safetext.Bound(s, n)
				if len(out) > n || !utf8.ValidString(out) || !strings.HasPrefix(s, out) {
					t.Errorf("Bound(%.8q…, %d) = %q: want a valid prefix of at most %d bytes", s, n, out, n)
					break
				}
			}
		}
	})
	// Error text carries stderr, which need not be UTF-8: one stray byte must not throw away a whole half.
	t.Run("invalid UTF-8 in the input", func(t *testing.T) {
		s := "\xff" + strings.Repeat("a", 20000) + "\xfe"
		out := safetext.Bound(s, maxOutput)
		if len(out) > maxOutput || len(out) < maxOutput-2*utf8.UTFMax {
			t.Errorf("Bound kept %d bytes of %d, want about %d: %.40q", len(out), len(s), maxOutput, out)
		}
	})
}

func FuzzRedact(f *testing.F) {
	for _, tc := range secretCorpus() {
		f.Add(tc.text)
	}
	for _, s := range ordinaryCorpus() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := safetext.Redact(s)
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Errorf("Redact(%q) = %q: not valid UTF-8", s, out)
		}
		if again := safetext.Redact(out); again != out {
			t.Errorf("Redact not idempotent on %q:\n%q\n%q", s, out, again)
		}
		// Every secret that Secrets recognises as a token is gone. (Redacted URL passwords and password assignments
		// still look like one to Secrets: TestRedactedTextIsNotASecret.)
		for _, k := range safetext.Secrets(out) {
			if k != "url-password" && k != "password-assignment" {
				t.Errorf("Redact(%q) = %q still holds a %s", s, out, k)
			}
		}
		_ = safetext.Secrets(s)
	})
}

func FuzzBound(f *testing.F) {
	f.Add(strings.Repeat("日本語", 100), 100)
	f.Add(strings.Repeat("a", 1000), 200)
	f.Add("🙂é", 64)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 64 || n > 1<<20 {
			return // the marker needs room; tiny limits are TestBound's
		}
		out := safetext.Bound(s, n)
		if len(s) <= n {
			if out != s {
				t.Errorf("Bound changed a short input")
			}
			return
		}
		if len(out) > n {
			t.Errorf("Bound(%d bytes, %d) is %d bytes", len(s), n, len(out))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Errorf("Bound(%q, %d) = %q: not valid UTF-8", s, n, out)
		}
	})
}

// Cut keeps at most n bytes and never a rune cut in two.
func TestCut(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"}, {"hello", 5, "hello"}, {"hello", 3, "hel"}, {"héllo", 2, "h"}, {"héllo", 3, "hé"},
		{"日本", 4, "日"}, {"日本", 0, ""}, {"x", -1, ""},
	} {
		if got := safetext.Cut(tt.s, tt.n); got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// A remote's URL in an event or a message names the remote, never the credential in it, in either place a URL carries
// one.
func TestWithoutUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"https://x-access-token:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r.git": "https://github.com/o/r.git",
		"https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r.git":                "https://github.com/o/r.git",
		"ssh://git@github.com/o/r.git":       "ssh://github.com/o/r.git",
		"https://github.com/o/r.git?ref=a@b": "https://github.com/o/r.git?ref=a@b",
		"origin":                             "origin",
		"git@github.com:o/r.git":             "git@github.com:o/r.git",
	} {
		if got := safetext.WithoutUserinfo(in); got != want {
			t.Errorf("WithoutUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
