package hub

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// GitHub's own test values ("Validating webhook deliveries", Testing the webhook payload validation).
func TestVerifyGitHubsVector(t *testing.T) {
	const secret, body = "It's a Secret to Everybody", "Hello, World!"
	const sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := "sha256=" + hex.EncodeToString(Sign(secret, []byte(body))); got != sig {
		t.Fatalf("Sign = %s, want %s", got, sig)
	}
	if err := Verify(secret, sig, []byte(body)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for name, c := range map[string]struct{ secret, sig, body string }{
		"another body":   {secret, sig, "Hello, World?"},
		"another secret": {"It's a secret to everybody", sig, body},
		"no prefix":      {secret, sig[len("sha256="):], body},
		"sha1":           {secret, "sha1=" + sig[len("sha256="):], body},
		"not hex":        {secret, "sha256=" + "ZZ" + sig[len("sha256=")+2:], body},
		"short":          {secret, sig[:len(sig)-2], body},
		"empty":          {secret, "", body},
	} {
		if err := Verify(c.secret, c.sig, []byte(c.body)); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: Verify = %v, want ErrBadSignature", name, err)
		}
	}
	if err := Verify("", sig, []byte(body)); err == nil || errors.Is(err, ErrBadSignature) {
		t.Errorf("no secret: Verify = %v, want an error that names the missing secret", err)
	}
}

// A review comment may mention orch anywhere, but as a whole login only.
func TestMentions(t *testing.T) {
	for body, want := range map[string]bool{
		"@orch please rename this":          true,
		"Could you, @ORCH, rename this?":    true,
		"rename this (@orch)":               true,
		"rename this.\n\n@orch":             true,
		"@orchestra would know":             false,
		"mail ops@orch.dev":                 false,
		"see github.com/@orch":              false,
		"nothing for a bot here":            false,
		"@orch-bot is someone else":         false,
		"first @orchard, then @orch: do it": true,
	} {
		if got := Mentions(body, "@orch"); got != want {
			t.Errorf("Mentions(%q) = %v, want %v", body, got, want)
		}
	}
}

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
		want Command
	}{
		{"@orch add a cache to the client", true, Command{Words: "add a cache to the client"}},
		{"  @ORCH   B  ", true, Command{Words: "B"}},
		{"@orch, please add tests", true, Command{Words: "please add tests"}},
		{"@orch: retry", true, Command{Words: "retry", Verb: VerbRetry}},
		{"@orch retry with the v2 client", true, Command{Words: "retry with the v2 client"}},
		{"@orch abort wrong repository", true, Command{Words: "abort wrong repository", Verb: VerbAbort, Reason: "wrong repository"}},
		{"@orch Abort", true, Command{Words: "Abort", Verb: VerbAbort}},
		{"@orch allow", true, Command{Words: "allow", Verb: VerbAllow}},
		{"@orch allow  for run", true, Command{Words: "allow  for run", Verb: VerbAllowRun}},
		{"@orch allow it once more", true, Command{Words: "allow it once more"}},
		{"@orch deny it writes outside the repo", true, Command{Words: "deny it writes outside the repo", Verb: VerbDeny, Reason: "it writes outside the repo"}},
		{"@orch", true, Command{}},
		{"@orchestra do it", false, Command{}},
		{"@orch-bot do it", false, Command{}},
		{"please @orch do it", false, Command{}},
		{"> @orch do it", false, Command{}},
		{"", false, Command{}},
	} {
		got, ok := ParseCommand(c.body, "@orch")
		if ok != c.ok || got != c.want {
			t.Errorf("ParseCommand(%q) = %+v, %v; want %+v, %v", c.body, got, ok, c.want, c.ok)
		}
	}
	if _, ok := ParseCommand("@orch do it", ""); ok {
		t.Error("an empty mention matched")
	}
}

func TestCommandAnswer(t *testing.T) {
	question := &jobs.Escalation{ID: "e2", Trigger: jobs.TriggerNeedsHelp,
		Options: []jobs.Option{{Key: "A", Label: "Redis"}, {Key: "B", Label: "In memory"}}}
	approval := &jobs.Escalation{ID: "e3", Trigger: jobs.TriggerApproval, Options: escalation.ApprovalOptions("Bash(git push:*)")}
	cmd := func(body string) Command {
		c, ok := ParseCommand(body, "@orch")
		if !ok {
			t.Fatalf("%q is not a command", body)
		}
		return c
	}
	for _, c := range []struct {
		e    *jobs.Escalation
		body string
		want escalation.Request
	}{
		{question, "@orch b)", escalation.Request{Type: jobs.ResolveChoose, Key: "B"}},
		{question, "@orch [A]", escalation.Request{Type: jobs.ResolveChoose, Key: "A"}},
		{question, "@orch use Redis with a 5 minute TTL", escalation.Request{Type: jobs.ResolveAnswer, Text: "use Redis with a 5 minute TTL"}},
		{question, "@orch retry", escalation.Request{Type: jobs.ResolveRetry}},
		{question, "@orch abort not now", escalation.Request{Type: jobs.ResolveAbort, Reason: "not now"}},
		{question, "@orch abort", escalation.Request{Type: jobs.ResolveAbort, Reason: "aborted by ann on GitHub"}},
		{approval, "@orch allow", escalation.Request{Type: jobs.ResolveChoose, Key: escalation.AllowOnce}},
		{approval, "@orch allow for run", escalation.Request{Type: jobs.ResolveChoose, Key: escalation.AllowForRun}},
		{approval, "@orch deny", escalation.Request{Type: jobs.ResolveChoose, Key: escalation.DenyCall}},
		{approval, "@orch deny it pushes to main", escalation.Request{Type: jobs.ResolveAnswer, Text: "it pushes to main"}},
	} {
		got, err := cmd(c.body).Answer(c.e, "r-1", "ann")
		if err != nil {
			t.Errorf("%q: %v", c.body, err)
			continue
		}
		c.want.RunID, c.want.EscalationID, c.want.By, c.want.Via = "r-1", c.e.ID, "ann", "github"
		if got != c.want {
			t.Errorf("%q: %+v, want %+v", c.body, got, c.want)
		}
	}
	for _, body := range []string{"@orch allow", "@orch deny", "@orch"} {
		if _, err := cmd(body).Answer(question, "r-1", "ann"); !errors.Is(err, escalation.ErrInvalid) {
			t.Errorf("%q on a question that is no approval: %v, want ErrInvalid", body, err)
		}
	}
	if _, err := cmd("@orch use \x00 here").Answer(question, "r-1", "ann"); !errors.Is(err, escalation.ErrInvalid) {
		t.Errorf("an answer with a NUL byte: %v, want ErrInvalid", err)
	}
}
