package forge

import (
	"net/url"
	"strings"
)

// ParseGitHubRemote finds the repository a git remote URL names on GitHub, or on the GitHub Enterprise server host
// ("" is github.com; a port, when host has one, must match too). It understands the URLs GitHub hands out and git
// accepts for them:
//
//	https://github.com/OWNER/REPO(.git)      credentials in the URL, if any, are ignored; http too
//	git@github.com:OWNER/REPO.git            scp-like ssh, any user
//	ssh://git@github.com(:port)/OWNER/REPO.git
//
// Anything else — a local path, a file:// URL, another host, a path that is not exactly OWNER/REPO — is ok=false.
func ParseGitHubRemote(remote, host string) (owner, repo string, ok bool) {
	host = normalHost(host)
	remote = strings.TrimSpace(remote)
	var h, path string
	if strings.Contains(remote, "://") {
		h, path, ok = urlRemote(remote, !strings.Contains(host, ":"))
	} else {
		h, path, ok = scpRemote(remote)
	}
	if !ok || h == "" || !strings.EqualFold(h, host) {
		return "", "", false
	}
	path = strings.TrimPrefix(path, "/")
	path = strings.TrimSuffix(path, "/")
	path = strings.TrimSuffix(path, ".git")
	owner, repo, found := strings.Cut(path, "/")
	if !found || !validName(owner) || !validName(repo) {
		return "", "", false
	}
	return owner, repo, true
}

// urlRemote is the host and path of a remote given as a URL of a protocol GitHub speaks; the host without its port
// when bareHost.
func urlRemote(remote string, bareHost bool) (host, path string, ok bool) {
	u, err := url.Parse(remote)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", false
	}
	switch strings.ToLower(u.Scheme) {
	case "https", "http", "ssh", "git+ssh", "ssh+git":
	default:
		return "", "", false
	}
	host = u.Host
	if bareHost {
		host = u.Hostname()
	}
	return host, u.Path, true
}

// scpRemote is the host and path of a scp-like remote, [user@]host:path, where the part before the first colon has no
// slash (else git reads a local path).
func scpRemote(remote string) (host, path string, ok bool) {
	colon := strings.Index(remote, ":")
	if colon < 0 || strings.Contains(remote[:colon], "/") {
		return "", "", false
	}
	host = remote[:colon]
	if at := strings.LastIndex(host, "@"); at >= 0 {
		host = host[at+1:]
	}
	path = remote[colon+1:]
	if strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "//") {
		path = path[1:] // git@github.com:/o/r.git is the same repository
	}
	return host, path, true
}

// normalHost is the host a user means by "", "github.com", "https://ghe.example.com/" and the like.
func normalHost(host string) string {
	host = strings.TrimSpace(host)
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	host = strings.TrimSuffix(host, "/")
	if host == "" {
		return "github.com"
	}
	return host
}

// validName is a GitHub account or repository name: letters, digits, '-', '_' and '.' (accounts allow fewer; GitHub
// answers for those, not this); never only dots.
func validName(s string) bool {
	if strings.Trim(s, ".") == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}
