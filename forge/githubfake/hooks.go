package githubfake

// Webhook deliveries, as GitHub sends them ("Webhook events and payloads", "Validating webhook deliveries",
// "Handling failed webhook deliveries", docs.github.com):
//
//   - A delivery is a POST with Content-Type application/json and the headers X-GitHub-Hook-ID, X-GitHub-Event,
//     X-GitHub-Delivery (a GUID), User-Agent (GitHub-Hookshot/…), X-GitHub-Hook-Installation-Target-Type and -ID,
//     X-Hub-Signature (sha1=, kept for compatibility) and X-Hub-Signature-256 (sha256= and the hex HMAC-SHA256 of the
//     body keyed with the webhook's secret), the signatures only when a secret is set.
//   - X-GitHub-Delivery names the event, not the attempt: a redelivery carries the same GUID and the same body (the
//     REST description of hook-delivery: "Unique identifier for the event (shared with all deliveries for all webhooks
//     that subscribe to this event)"; github/docs#32822). GitHub does not deliver again on its own after a failure;
//     a person or the API redelivers.
//   - The payloads: the fields of the issue_comment, issues and ping events that a client reads, as the payload
//     examples of "Webhook events and payloads" show them (repository with full_name, owner, clone_url, html_url,
//     default_branch; sender with login and type; comment with author_association).

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Delivery is one webhook delivery: what a redelivery sends again.
type Delivery struct {
	Event string
	GUID  string
	Body  []byte
}

// HookID is the id of the webhook the fake's deliveries come from.
const HookID = 4242

// Deliver signs payload with secret and POSTs it to url as a delivery of event.
func (g *GitHub) Deliver(url, secret, event string, payload any) (*http.Response, Delivery, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, Delivery{}, err
	}
	var guid [16]byte
	_, _ = rand.Read(guid[:])
	d := Delivery{Event: event, Body: body, GUID: fmt.Sprintf("%x-%x-%x-%x-%x", guid[:4], guid[4:6], guid[6:8], guid[8:10], guid[10:])}
	resp, err := g.Redeliver(url, secret, d)
	return resp, d, err
}

// Redeliver sends d again, as GitHub's Redeliver does: the same GUID, the same body.
func (g *GitHub) Redeliver(url, secret string, d Delivery) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set("X-GitHub-Event", d.Event)
	h.Set("X-GitHub-Delivery", d.GUID)
	h.Set("X-GitHub-Hook-ID", fmt.Sprint(HookID))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	h.Set("X-GitHub-Hook-Installation-Target-ID", "35129377")
	if secret != "" {
		h.Set("X-Hub-Signature", "sha1="+Sign1(secret, d.Body))
		h.Set("X-Hub-Signature-256", "sha256="+Sign256(secret, d.Body))
	}
	c := &http.Client{Timeout: 10 * time.Second} // GitHub waits 10 seconds for an answer
	return c.Do(req)
}

// Sign256 is the hex HMAC-SHA256 of body keyed with secret.
func Sign256(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign1 is the hex HMAC-SHA1 of body keyed with secret (X-Hub-Signature).
func Sign1(secret string, body []byte) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// PingPayload is the ping GitHub sends when a webhook is created.
func PingPayload() map[string]any {
	return map[string]any{"zen": "Design for failure.", "hook_id": HookID,
		"hook": map[string]any{"type": "Repository", "id": HookID, "active": true,
			"events": []string{"issue_comment", "issues"}, "config": map[string]any{"content_type": "json"}}}
}

// IssueCommentPayload is the issue_comment event of c on its issue, action created, edited or deleted; sender is
// who did it.
func (g *GitHub) IssueCommentPayload(owner, name string, c Comment, action string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	is, pull := rp.issue(c.Issue)
	if is == nil {
		panic(fmt.Sprintf("githubfake: %s/%s has no issue %d", owner, name, c.Issue))
	}
	return map[string]any{"action": action, "issue": g.issueJSON(nil, rp, is, pull),
		"comment": g.commentJSON(nil, rp, &c), "repository": g.repoJSON(rp), "sender": g.userJSON(c.Author, c.UserType)}
}

// IssuesPayload is the issues event of issue number by sender: action assigned (with assignee) or labeled (with
// label), or any other action.
func (g *GitHub) IssuesPayload(owner, name string, number int, action, sender, assignee, label string) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	rp := g.repo(owner, name)
	is, pull := rp.issue(number)
	if is == nil {
		panic(fmt.Sprintf("githubfake: %s/%s has no issue %d", owner, name, number))
	}
	out := map[string]any{"action": action, "issue": g.issueJSON(nil, rp, is, pull), "repository": g.repoJSON(rp),
		"sender": g.userJSON(sender, "User")}
	if assignee != "" {
		out["assignee"] = g.userJSON(assignee, "User")
	}
	if label != "" {
		out["label"] = map[string]any{"name": label, "color": "ededed"}
	}
	return out
}

// repoJSON is a repository in the fields of a webhook payload's repository a client reads; the caller holds mu.
func (g *GitHub) repoJSON(rp *repo) map[string]any {
	full := rp.owner + "/" + rp.name
	clone := g.srv.URL + "/" + full + ".git" // the fake serves no git: a test clones the repository it set up
	return map[string]any{"id": 35129377, "name": rp.name, "full_name": full, "private": true,
		"owner": g.userJSON(rp.owner, "Organization"), "html_url": g.srv.URL + "/" + full, "clone_url": clone,
		"default_branch": "main"}
}
