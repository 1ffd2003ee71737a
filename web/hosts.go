package web

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The names the view answers to, and why.
//
// A browser decides what a page may read by the page's name, not by the address the name leads to. A page on
// evil.example whose name is then rebound to 127.0.0.1 (DNS rebinding) talks to the view from the user's own browser:
// a loopback client, and a same-origin one, so it reads the pages and posts the forms with a valid CSRF token. What
// gives it away is the Host header, which carries the name the browser used. So every request is checked against the
// names the view is reachable under, before anything else — before a cookie is set or a form is read:
//
//   - the loopback names, always: localhost and a loopback address (127.0.0.1, [::1], any of 127.0.0.0/8), with or
//     without a port, in any case, with or without the final dot of a fully qualified name. An address is not a
//     name DNS can rebind, and localhost is this machine's by definition;
//   - with ORCH_WEB_TOKEN, the host of ORCH_PUBLIC_URL too. Without a token the view is this machine's alone, so it
//     serves no other name even when one is configured: a tokenless view behind a reverse proxy on this machine
//     must not become everyone's under the proxy's name. A token without ORCH_PUBLIC_URL serves the loopback names
//     only: with a token a rebound page could not sign in anyway, but "any name" would be a rule nobody chose, and
//     the refusal tells the person who meets it which setting to add.
//
// The port is not part of the check: the rebound name is what the attacker controls, and a proxy in front may keep
// or drop the port it was reached on.

// CheckPublicURL refuses an ORCH_PUBLIC_URL that names no host the view could answer to.
func CheckPublicURL(publicURL string) error {
	_, err := publicName(publicURL)
	return err
}

// publicName is the host of ORCH_PUBLIC_URL as the view compares it, or "" when there is none.
func publicName(publicURL string) (string, error) {
	if publicURL == "" {
		return "", nil
	}
	u, err := url.Parse(strings.TrimSpace(publicURL))
	if err != nil {
		return "", fmt.Errorf("ORCH_PUBLIC_URL %q is not a URL: want http(s)://HOST[:PORT]/", publicURL)
	}
	name, ok := hostName(u.Host)
	if (u.Scheme != "http" && u.Scheme != "https") || !ok {
		return "", fmt.Errorf("ORCH_PUBLIC_URL %q names no host: want http(s)://HOST[:PORT]/", publicURL)
	}
	return name, nil
}

// hostName is the name in a Host header ("Orch.Example.com.:443", "[::1]:3080"), in lower case, without its port,
// brackets or final dot. ok is false for a header that is no host: empty, a bad port, an IPv6 address without its
// brackets.
func hostName(host string) (name string, ok bool) {
	name = host
	if strings.HasPrefix(host, "[") || strings.Count(host, ":") == 1 {
		h, port, err := net.SplitHostPort(host)
		if err != nil {
			if !strings.HasPrefix(host, "[") || !strings.HasSuffix(host, "]") {
				return "", false
			}
			h, port = host[1:len(host)-1], "" // "[::1]": an IPv6 address without a port
		}
		if strings.Trim(port, "0123456789") != "" || (strings.HasPrefix(host, "[") && net.ParseIP(h) == nil) {
			return "", false
		}
		name = h
	} else if strings.Contains(host, ":") {
		return "", false
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" || strings.HasSuffix(name, ".") {
		return "", false
	}
	return name, true
}

// loopbackName reports whether name (as hostName gives it) is this machine's.
func loopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// servedHost reports whether the view answers to the Host header host.
func (s *Server) servedHost(host string) bool {
	name, ok := hostName(host)
	if !ok {
		return false
	}
	return loopbackName(name) || (s.cfg.Token != "" && s.public != "" && name == s.public)
}

// hosts refuses a request made under a name the view does not answer to, with 421 Misdirected Request (the request
// reached a server that does not serve that name) and one sentence saying which names it serves and how to add one.
// It sets no cookie and reads nothing of the request.
func (s *Server) hosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.servedHost(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		served := "localhost, 127.0.0.1 and [::1]"
		add := "set ORCH_WEB_TOKEN (people then sign in with it) and ORCH_PUBLIC_URL to the address people use"
		if s.cfg.Token != "" {
			add = "set ORCH_PUBLIC_URL to the address people use"
			if s.public != "" {
				served = s.public + " (ORCH_PUBLIC_URL), " + served
				add = "set ORCH_PUBLIC_URL to that address instead"
			}
		}
		http.Error(w, fmt.Sprintf("This orch web view answers only to %s, not to %q: to reach it under another name, %s.",
			served, truncate(r.Host, 100), add), http.StatusMisdirectedRequest)
	})
}
