package safetext

import (
	"slices"
	"strings"

	"github.com/orchrun/orch/internal/lazyre"
)

// secretPatterns match credentials that must never reach Redis, a log, a terminal or Slack. Each keeps a recognisable
// prefix so a person can tell which credential leaked and rotate it.
var secretPatterns = []struct {
	name string
	re   *lazyre.Regexp
}{
	{"private-key", lazyre.New(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`)},
	{"aws-access-key", lazyre.New(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"aws-secret", lazyre.New(`(?i)(aws_secret_access_key|aws_secret)["']?\s*[=:]\s*["']?[A-Za-z0-9/+=]{40}`)},
	{"github-token", lazyre.New(`\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b`)},
	{"slack-token", lazyre.New(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
	{"slack-app-token", lazyre.New(`\bxapp-[0-9]-[A-Za-z0-9-]{10,}\b`)},
	{"anthropic-key", lazyre.New(`\bsk-ant-[A-Za-z0-9_-]{20,}\b`)},
	{"openai-key", lazyre.New(`\bsk-(proj-)?[A-Za-z0-9_-]{32,}\b`)},
	{"google-api-key", lazyre.New(`\bAIza[0-9A-Za-z_-]{35}`)},
	{"stripe-key", lazyre.New(`\b[rs]k_(live|test)_[A-Za-z0-9]{20,}\b`)},
	{"jwt", lazyre.New(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b`)},
	{"url-password", lazyre.New(`\b([a-z][a-z0-9+.-]*://[^\s:/@]*):[^\s@/]+@`)},
	{"password-assignment", lazyre.New(`(?i)\b([a-z0-9_]*(?:password|passwd|secret|api_key|apikey|access_token|auth_token))["']?\s*[=:]\s*["']?[^\s"',}]{6,}`)},
}

// Redact replaces every secret in s with a marker naming its kind.
func Redact(s string) string {
	return redactPatterns(s, nil)
}

// redactPatterns is Redact, and adds to kinds (when not nil) the kind of each secret it replaced that was not a
// redaction already: what Secrets would name, found in the same pass.
func redactPatterns(s string, kinds *[]string) string {
	for _, p := range secretPatterns {
		replace := func(m string) string {
			if kinds != nil && !strings.Contains(m, "[REDACTED") && !slices.Contains(*kinds, p.name) {
				*kinds = append(*kinds, p.name)
			}
			switch p.name {
			case "url-password":
				return p.re.ReplaceAllString(m, "${1}:[REDACTED]@")
			case "aws-secret", "password-assignment":
				loc := p.re.FindStringSubmatchIndex(m)
				return m[:loc[3]] + "=[REDACTED:" + p.name + "]"
			}
			return "[REDACTED:" + p.name + "]"
		}
		s = p.re.ReplaceAllStringFunc(s, replace)
	}
	return s
}

// Secrets names the kinds of secret found in s. Text that Redact already handled is not a secret: an agent that
// echoes redacted guidance must not raise a security escalation.
func Secrets(s string) []string {
	var kinds []string
	for _, p := range secretPatterns {
		for _, m := range p.re.FindAllString(s, -1) {
			if !strings.Contains(m, "[REDACTED") {
				kinds = append(kinds, p.name)
				break
			}
		}
	}
	return kinds
}
