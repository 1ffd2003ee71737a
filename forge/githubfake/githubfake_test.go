package githubfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// call sends one raw request, as any client would, and returns the status and the decoded body.
func call(t *testing.T, g *GitHub, method, path, auth, body string) (int, http.Header, any) {
	t.Helper()
	req, err := http.NewRequest(method, g.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s %s: body %q is not JSON", method, path, raw)
	}
	return resp.StatusCode, resp.Header, v
}

func TestFake(t *testing.T) {
	g := New("tok")
	defer g.Close()
	g.AddRepo("acme", "app")
	g.Push("acme", "app", "main", "aaa")
	g.Push("acme", "app", "feature", "bbb")
	const pulls = "/repos/acme/app/pulls"

	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		message                        string
	}{
		{"no token hides a private repository", "GET", pulls, "", "", 404, "Not Found"},
		{"wrong token", "GET", pulls, "Bearer nope", "", 401, "Bad credentials"},
		{"unknown scheme", "GET", pulls, "Basic dG9r", "", 401, "Bad credentials"},
		{"unknown repository", "GET", "/repos/acme/nope/pulls", "Bearer tok", "", 404, "Not Found"},
		{"unknown route", "GET", "/user", "Bearer tok", "", 404, "Not Found"},
		{"bad JSON", "POST", pulls, "token tok", "{", 400, "Problems parsing JSON"},
		{"no head", "POST", pulls, "token tok", `{"title":"t","base":"main"}`, 422, "Validation Failed"},
		{"bad state", "GET", pulls + "?state=merged", "token tok", "", 422, "Validation Failed"},
		{"no such pull request", "PATCH", pulls + "/9", "Bearer tok", `{"title":"t"}`, 404, "Not Found"},
	} {
		status, _, body := call(t, g, tc.method, tc.path, tc.auth, tc.body)
		m, _ := body.(map[string]any)
		if status != tc.status || m["message"] != tc.message || m["documentation_url"] == nil {
			t.Errorf("%s: %d %v, want %d %q with a documentation_url", tc.name, status, body, tc.status, tc.message)
		}
	}

	// Created under the enterprise prefix: 201, Location, the pull-request fields.
	status, h, body := call(t, g, "POST", "/api/v3"+pulls, "Bearer tok",
		`{"title":"Feature","head":"acme:feature","base":"main","draft":true}`)
	p, _ := body.(map[string]any)
	if status != 201 || p["number"] != 1.0 || p["draft"] != true || p["state"] != "open" || p["body"] != nil ||
		p["html_url"] != g.HTMLURL("acme", "app", 1) || h.Get("Location") != g.URL()+"/api/v3/repos/acme/app/pulls/1" {
		t.Errorf("create: %d %v, Location %q", status, body, h.Get("Location"))
	}
	if head, _ := p["head"].(map[string]any); head["ref"] != "feature" || head["label"] != "acme:feature" || head["sha"] != "bbb" {
		t.Errorf("create: head %v", p["head"])
	}
	status, _, body = call(t, g, "POST", pulls, "Bearer tok", `{"title":"Again","head":"feature","base":"main"}`)
	if errs, _ := body.(map[string]any)["errors"].([]any); status != 422 || len(errs) != 1 ||
		errs[0].(map[string]any)["message"] != "A pull request already exists for acme:feature." {
		t.Errorf("duplicate: %d %v", status, body)
	}

	// The list filters: head as owner:branch (without the owner, no filter), base, state.
	for _, tc := range []struct {
		query string
		n     int
	}{
		{"?head=acme:feature", 1}, {"?head=acme:main", 0}, {"?head=other:feature", 0}, {"?head=feature", 1},
		{"?base=main", 1}, {"?base=feature", 0}, {"?state=closed", 0}, {"?state=all", 1},
	} {
		if status, _, body := call(t, g, "GET", pulls+tc.query, "token tok", ""); status != 200 || len(body.([]any)) != tc.n {
			t.Errorf("list %s: %d %v, want %d pull requests", tc.query, status, body, tc.n)
		}
	}

	status, _, body = call(t, g, "PATCH", pulls+"/1", "Bearer tok", `{"title":"New","body":"text"}`)
	if p, _ := body.(map[string]any); status != 200 || p["title"] != "New" || p["body"] != "text" || p["draft"] != true {
		t.Errorf("update: %d %v", status, body)
	}
	if got := len(g.Requests()); got != 9+2+8+1 {
		t.Errorf("%d requests recorded", got)
	}
}
