package hub

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// Verb is what a command asks beyond its words.
type Verb string

// The verbs of a command (DESIGN §12); a comment with none of them is words: a task, guidance, or an option's key.
const (
	VerbNone     Verb = ""
	VerbRetry    Verb = "retry"
	VerbAbort    Verb = "abort"
	VerbAllow    Verb = "allow"
	VerbAllowRun Verb = "allow for run"
	VerbDeny     Verb = "deny"
)

// Command is a comment that starts with orch's mention: "@orch add a cache", "@orch B", "@orch abort wrong repo".
type Command struct {
	// Words is everything after the mention, trimmed.
	Words string
	Verb  Verb
	// Reason is what follows abort or deny ("" when nothing does).
	Reason string
}

// ParseCommand reads a comment's body as a command when it starts with mention (such as "@orch"; GitHub's logins are
// case-insensitive, and so is the mention). The mention must be whole: "@orchestra" is not "@orch". ok is false for a
// comment that is not a command; a command with no words is one (a bare mention), and says nothing to do.
func ParseCommand(body, mention string) (c Command, ok bool) {
	rest, ok := cutMention(strings.TrimSpace(body), mention)
	if !ok {
		return Command{}, false
	}
	c.Words = strings.TrimSpace(rest)
	first, tail := cutWord(c.Words)
	switch strings.ToLower(first) {
	case "retry":
		if tail == "" {
			c.Verb = VerbRetry
		}
	case "abort":
		c.Verb, c.Reason = VerbAbort, tail
	case "deny":
		c.Verb, c.Reason = VerbDeny, tail
	case "allow":
		switch strings.ToLower(strings.Join(strings.Fields(tail), " ")) {
		case "":
			c.Verb = VerbAllow
		case "for run", "for this run", "for the run":
			c.Verb = VerbAllowRun
		}
	}
	return c, true
}

// Mentions reports whether body mentions mention anywhere, as a whole login: "please @orch, fix" does, "@orchestra" and
// "ops@orch.dev" do not. Case does not matter, as in ParseCommand.
func Mentions(body, mention string) bool {
	lower, m := strings.ToLower(body), strings.ToLower(mention)
	for i := 0; m != "" && i < len(lower); {
		j := strings.Index(lower[i:], m)
		if j < 0 {
			return false
		}
		at := i + j
		before, _ := utf8.DecodeLastRuneInString(lower[:at])
		after, _ := utf8.DecodeRuneInString(lower[at+len(m):])
		end := at+len(m) == len(lower) || unicode.IsSpace(after) || strings.ContainsRune(",:;.!?)]}'\"", after)
		if end && (at == 0 || !loginRune(before)) {
			return true
		}
		i = at + len(m)
	}
	return false
}

// loginRune reports a rune that can be part of a login or an address, so that a mention cannot follow it.
func loginRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.@/", r)
}

// cutMention returns what follows mention at the start of s.
func cutMention(s, mention string) (string, bool) {
	if mention == "" || len(s) < len(mention) || !strings.EqualFold(s[:len(mention)], mention) {
		return "", false
	}
	rest := s[len(mention):]
	if r, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(r) && !strings.ContainsRune(",:;.!?", r) {
		return "", false // a longer login: "@orchestra", "@orch-bot"
	}
	return strings.TrimLeft(rest, ",:;.!? \t\r\n"), true
}

// cutWord splits s at its first run of white space.
func cutWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// Answer is the resolution c asks of escalation e of run runID, by login. A verb that does not fit the question is
// an error that says what would ("allow" answers an approval only); words that name one of the question's options
// ("B", "b)", "[B]") choose it, and any other words are the answer's text, which the run takes as guidance.
func (c Command) Answer(e *jobs.Escalation, runID, login string) (escalation.Request, error) {
	req := escalation.Request{RunID: runID, EscalationID: e.ID, By: login, Via: Via}
	approval := e.Trigger == jobs.TriggerApproval
	switch c.Verb {
	case VerbRetry:
		req.Type = jobs.ResolveRetry
	case VerbAbort:
		req.Type, req.Reason = jobs.ResolveAbort, c.Reason
		if req.Reason == "" {
			req.Reason = "aborted by " + login + " on GitHub"
		}
	case VerbAllow, VerbAllowRun, VerbDeny:
		if !approval {
			return req, fmt.Errorf("%w: %q answers a request for approval; this question is not one: answer it with an "+
				"option's key or your words", escalation.ErrInvalid, string(c.Verb))
		}
		req.Type, req.Key = jobs.ResolveChoose, approvalKeys[c.Verb]
		if c.Verb == VerbDeny && c.Reason != "" {
			// A denial with its reason: the agent is told why.
			req.Type, req.Key, req.Text = jobs.ResolveAnswer, "", c.Reason
		}
	default:
		if c.Words == "" {
			return req, fmt.Errorf("%w: say what to do after the mention: an option's key, retry, abort and a reason, "+
				"or your words", escalation.ErrInvalid)
		}
		if o, ok := e.OptionByKey(strings.TrimRight(strings.Trim(c.Words, "[]"), ").:")); ok {
			req.Type, req.Key = jobs.ResolveChoose, o.Key
		} else {
			req.Type, req.Text = jobs.ResolveAnswer, c.Words
		}
	}
	return req, req.Validate()
}

var approvalKeys = map[Verb]string{
	VerbAllow:    escalation.AllowOnce,
	VerbAllowRun: escalation.AllowForRun,
	VerbDeny:     escalation.DenyCall,
}

// Via is how the audit names answers and requests that came from GitHub.
const Via = "github"
