package safetext

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// The credentials orch holds (its Slack, GitHub, web and LLM tokens, Redis' password, a key passed to the agent on
// purpose) match no pattern when they are not of a well-known kind: a web token orch was given, a signing secret, a
// custom API key. Text that leaves the agent is checked for them by value, as well as by pattern (Redact, Secrets).

// A Secret is one credential orch holds, known by value.
type Secret struct {
	// Name is where orch got it: an environment variable, a flag or an orch.yaml key. It is what a person reads to
	// know which credential to rotate, in a redaction marker and in a security escalation; never the value.
	Name string
	// Part says which part of Name's value it is ("password", "path", "header value"), "" for the whole value.
	Part string
	// Value is the credential itself.
	Value string
}

// what describes s for a person, never with its value: "the value of SLACK_SIGNING_SECRET", "the password in
// ORCH_REDIS_URL".
func (s Secret) what() string {
	if s.Part == "" {
		return "the value of " + s.Name
	}
	return "the " + s.Part + " in " + s.Name
}

// MinSecretLen is the length from which a value is looked for in what the agent says: a shorter one (a Redis
// password "test") would be found in ordinary words, and each find stops the run as a security question. The patterns
// still apply to everything.
const MinSecretLen = 8

// A Redactor takes the secrets orch holds out of text, by value, and whatever the patterns recognise as one (Redact).
// A nil Redactor knows no value and works by pattern alone. It is safe for concurrent use.
type Redactor struct {
	secrets []Secret
	// forms are every way each value is written in the text orch reads (as is, and escaped as a JSON or Go string
	// holds it), longest first, so that a secret that holds another is taken out whole.
	forms []form
	// replacer replaces every form with its marker in one pass over the text.
	replacer *strings.Replacer
}

type form struct {
	text   string
	secret int // index in secrets
}

// NewRedactor returns a Redactor that knows secrets. Values shorter than MinSecretLen are left to the patterns.
func NewRedactor(secrets []Secret) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s.Value) < MinSecretLen || strings.TrimSpace(s.Value) == "" {
			continue
		}
		i := len(r.secrets)
		added := false
		for _, f := range writtenForms(s.Value) {
			if seen[f] {
				continue
			}
			seen[f] = true
			added = true
			r.forms = append(r.forms, form{text: f, secret: i})
		}
		if added {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first: strings.Replacer tries its pairs in order at each position.
	slices.SortStableFunc(r.forms, func(a, b form) int { return len(b.text) - len(a.text) })
	pairs := make([]string, 0, 2*len(r.forms))
	for _, f := range r.forms {
		pairs = append(pairs, f.text, "[REDACTED:"+r.secrets[f.secret].Name+"]")
	}
	r.replacer = strings.NewReplacer(pairs...)
	return r
}

// writtenForms are the ways v appears in what an agent prints: as is, and escaped inside a JSON string (the agent
// CLI's stream, a tool call's input) or a Go-quoted one (an error message). An escaped form is also a marker-safe
// place: the marker holds no character a JSON string escapes, so redacting inside JSON leaves valid JSON.
func writtenForms(v string) []string {
	forms := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	if q := strconv.Quote(v); len(q) >= 2 {
		add(q[1 : len(q)-1])
	}
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) == nil {
			q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
			if len(q) >= 2 {
				add(string(q[1 : len(q)-1]))
			}
		}
	}
	return forms
}

// Len is how many secrets r looks for by value.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	return len(r.secrets)
}

// Redact replaces every secret r knows with a marker naming where orch got it ("[REDACTED:ORCH_WEB_TOKEN]"), then
// whatever the patterns recognise (Redact).
func (r *Redactor) Redact(s string) string {
	return Redact(r.RedactValues(s))
}

// RedactValues replaces the secrets r knows, and nothing the patterns alone would find. It is for text whose shape
// must stay as it is, a tool call's JSON input: the marker is valid inside a JSON string, where a pattern's
// replacement may not be.
func (r *Redactor) RedactValues(s string) string {
	if r == nil || len(r.forms) == 0 {
		return s
	}
	return r.replacer.Replace(s)
}

// Find names the secrets s holds, never their values: "the value of NAME" (or "the password in NAME") for each
// secret orch holds, then the kind of each credential the patterns recognise elsewhere in s (Secrets). Empty when s
// holds none. It is what a security escalation says, about the agent's output or about a diff before it is committed.
func (r *Redactor) Find(s string) []string {
	found := r.FindValues(s)
	return append(found, Secrets(r.RedactValues(s))...)
}

// placedKinds are the patterns that know a secret by where it is written (after "password=", inside a URL), not by
// the shape its issuer gave it: in files a change adds they are mostly examples and test fixtures.
var placedKinds = []string{"url-password", "password-assignment"}

// FindInWork names what a change to the repository adds that must not be committed: the secrets r holds, by value,
// and credentials the patterns know by their own shape (cloud keys, private keys, issuers' tokens, JWTs).
func (r *Redactor) FindInWork(s string) []string {
	found := r.FindValues(s)
	for _, kind := range Secrets(r.RedactValues(s)) {
		if !slices.Contains(placedKinds, kind) {
			found = append(found, kind)
		}
	}
	return found
}

// Take is Redact and Find at once: s redacted, and the names of what was taken out of it. The patterns, which cost far
// more than the values, run once.
func (r *Redactor) Take(s string) (string, []string) {
	found := r.FindValues(s)
	var kinds []string
	s = redactPatterns(r.RedactValues(s), &kinds)
	return s, append(found, kinds...)
}

// FindValues names the secrets r knows that s holds, and none the patterns alone would find: for text such as a tool
// call's input, where a pattern would take a file's example password for a leak.
func (r *Redactor) FindValues(s string) []string {
	if r == nil {
		return nil
	}
	var found []string
	hit := make([]bool, len(r.secrets))
	for _, f := range r.forms {
		if !hit[f.secret] && strings.Contains(s, f.text) {
			hit[f.secret] = true
		}
	}
	for i, h := range hit {
		if h && !slices.Contains(found, r.secrets[i].what()) {
			found = append(found, r.secrets[i].what())
		}
	}
	return found
}
