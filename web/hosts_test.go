package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
)

// hostView is the view's handler on a fresh store, with the given token and public URL.
func hostView(t *testing.T, token, publicURL string) (http.Handler, *store.Store) {
	t.Helper()
	st := store.New(jobstest.Clients(t)["miniredis"], nil)
	s, err := New(Config{Store: st, Queue: &queue{}, Token: token, PublicURL: publicURL, LocalUser: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler(), st
}

// hostGet serves a GET of path under the Host header host, from a loopback client.
func hostGet(h http.Handler, host, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = host
	req.RemoteAddr = "127.0.0.1:50000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A page on another site whose name is rebound to 127.0.0.1 reaches the view from the user's own browser, a loopback
// client, under its own name: that name is refused, before any cookie is set or any form is read.
func TestAForeignHostIsRefused(t *testing.T) {
	for name, f := range serve(t, "") {
		t.Run(name, func(t *testing.T) {
			run := parked(t, f.store, "Which cache?")
			c := browser(t)
			foreign := strings.Replace(f.srv.URL, "127.0.0.1", "evil.example", 1)

			for _, path := range []string{"/", "/runs/" + run.ID, "/questions", "/login", "/static/app.js", "/runs/" + run.ID + "/events"} {
				req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
				req.Host = strings.TrimPrefix(foreign, "http://")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body := make([]byte, 4096)
				n, _ := resp.Body.Read(body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusMisdirectedRequest {
					t.Errorf("GET %s under a foreign name: %d, want 421", path, resp.StatusCode)
				}
				if sc := resp.Header.Values("Set-Cookie"); len(sc) > 0 {
					t.Errorf("GET %s under a foreign name set cookies: %q", path, sc)
				}
				if got := string(body[:n]); !strings.Contains(got, "localhost, 127.0.0.1 and [::1]") || !strings.Contains(got, "ORCH_PUBLIC_URL") {
					t.Errorf("the refusal does not say which names are served and how to add one: %q", got)
				}
			}

			// The rebound page's form post carries a CSRF token and cookie it got from the real view (the strongest
			// case): it is still refused, and the question stays open.
			_, page, _ := get(t, c, f.srv.URL+"/runs/"+run.ID)
			form := url.Values{"csrf": {csrfOf(t, page)}, "escalation": {run.OpenEscalation().ID}, "action": {"choose"}, "key": {"B"}}
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/runs/"+run.ID+"/answer", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Host = strings.TrimPrefix(foreign, "http://")
			req.Header.Set("Origin", foreign) // what a browser sends for a same-origin post from the rebound page
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("an answer under a foreign name: %d, want 421", resp.StatusCode)
			}
			if sc := resp.Header.Values("Set-Cookie"); len(sc) > 0 {
				t.Errorf("an answer under a foreign name set cookies: %q", sc)
			}
			if r, _ := f.store.Get(context.Background(), run.ID); r.OpenEscalation() == nil {
				t.Fatal("an answer under a foreign name resolved the question")
			}
			if calls := f.queue.calls; len(calls) != 0 {
				t.Errorf("an answer under a foreign name enqueued %v", calls)
			}
		})
	}
}

// Without a token the view answers to the loopback names, with or without a port, in any case, with the final dot
// of a fully qualified name; nothing else.
func TestLoopbackNamesWithoutAToken(t *testing.T) {
	h, _ := hostView(t, "", "https://orch.example.com")
	for _, host := range []string{"localhost", "localhost:3080", "LocalHost:3080", "localhost.:3080", "localhost.",
		"127.0.0.1", "127.0.0.1:3080", "[::1]", "[::1]:3080", "127.0.0.2:3080"} {
		if rec := hostGet(h, host, "/"); rec.Code != http.StatusOK {
			t.Errorf("Host %q: %d, want 200", host, rec.Code)
		}
	}
	// The public name needs the token: a tokenless view behind a proxy on this machine stays this machine's.
	for _, host := range []string{"", "evil.example", "evil.example:3080", "localhost.evil.example", "localhost.evil.example:3080",
		"evilocalhost", "127.0.0.1.nip.io:3080", "10.0.0.1:3080", "[2001:db8::1]:3080", "::1", "localhost:3080:1",
		"orch.example.com", "orch.example.com:443", "[::1", "localhost..", "localhost:3080."} {
		rec := hostGet(h, host, "/")
		if rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("Host %q: %d, want 421", host, rec.Code)
		}
		if sc := rec.Result().Header.Values("Set-Cookie"); len(sc) > 0 {
			t.Errorf("Host %q: cookies set: %q", host, sc)
		}
	}
}

// With a token the view also answers to the host of ORCH_PUBLIC_URL, whatever port a proxy in front keeps; without
// ORCH_PUBLIC_URL a token serves the loopback names only.
func TestPublicNameWithAToken(t *testing.T) {
	h, _ := hostView(t, "s3cret-token", "https://Orch.Example.com/")
	for _, host := range []string{"orch.example.com", "ORCH.example.com:443", "orch.example.com.", "orch.example.com:3000", "localhost:3000", "[::1]:3000"} {
		if rec := hostGet(h, host, "/login"); rec.Code != http.StatusOK {
			t.Errorf("Host %q: %d, want 200", host, rec.Code)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:443", "orch.example.com.evil.example", "example.com", "sub.orch.example.com"} {
		rec := hostGet(h, host, "/login")
		if rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("Host %q: %d, want 421", host, rec.Code)
		}
		if sc := rec.Result().Header.Values("Set-Cookie"); len(sc) > 0 {
			t.Errorf("Host %q: cookies set: %q", host, sc)
		}
		if !strings.Contains(rec.Body.String(), "orch.example.com") {
			t.Errorf("the refusal does not name the public name: %q", rec.Body.String())
		}
	}

	h, _ = hostView(t, "s3cret-token", "")
	if rec := hostGet(h, "orch.example.com", "/login"); rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), "ORCH_PUBLIC_URL") {
		t.Errorf("a token without ORCH_PUBLIC_URL served a public name: %d %q", rec.Code, rec.Body.String())
	}
	if rec := hostGet(h, "localhost:3080", "/login"); rec.Code != http.StatusOK {
		t.Errorf("a token without ORCH_PUBLIC_URL refused localhost: %d", rec.Code)
	}
}

func TestPublicURLMustNameAHost(t *testing.T) {
	st := store.New(jobstest.Clients(t)["miniredis"], nil)
	for _, u := range []string{"orch.example.com", "https://", "https://orch.example.com:x/", "::"} {
		if _, err := New(Config{Store: st, Token: "t", PublicURL: u}); err == nil || !strings.Contains(err.Error(), "ORCH_PUBLIC_URL") {
			t.Errorf("PublicURL %q: %v", u, err)
		}
	}
}
