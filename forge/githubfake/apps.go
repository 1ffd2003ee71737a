package githubfake

// GitHub Apps: an App authenticates as itself with a JWT it signs, finds its installation on a repository, and mints
// installation tokens that act on the installation's repositories. Where each behaviour comes from (GitHub's REST API
// reference and "Authenticating as a GitHub App", "Generating a JSON Web Token (JWT) for a GitHub App", API version
// 2022-11-28):
//
//   - The JWT: RS256 (RSASSA-PKCS1-v1_5 with SHA-256), signed with the App's private key; claims iat, exp and iss (the
//     App's id, or its client id); exp no more than 10 minutes after the time it is checked, iat not in the future
//     beyond the 60 seconds GitHub allows for clock drift. A token that fails is 401. GitHub's messages for the
//     failures are not documented; the fake says "A JSON web token could not be decoded" (the message users report for
//     a malformed or wrongly signed one) and "'Expiration time' claim ('exp') is too far in the future".
//   - apps/get-repo-installation (GET /repos/{owner}/{repo}/installation), as the App: the installation (id, app_id,
//     account, target_type, repository_selection); 404 when the App is not installed on the repository.
//   - apps/create-installation-access-token (POST /app/installations/{installation_id}/access_tokens), as the App: 201
//     with token and expires_at (an hour later); 404 for an installation of another App, or none.
//   - An installation token goes in "Authorization: token …" or "Bearer …" as any token, and reaches the
//     installation's repositories only: another repository is 404, as for any token that cannot see it.

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type app struct {
	id  int64
	key *rsa.PublicKey
}

type installation struct {
	id    int64
	app   int64
	repos map[string]bool // key(owner, name)
}

// AddApp registers a GitHub App whose JWTs verify with key.
func (g *GitHub) AddApp(id int64, key *rsa.PublicKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.apps == nil {
		g.apps = map[int64]*app{}
	}
	g.apps[id] = &app{id: id, key: key}
}

// Install installs App appID on a repository, as an owner would, and returns the installation's id.
func (g *GitHub) Install(appID int64, owner, name string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repo(owner, name) // it must exist
	for _, in := range g.installs {
		if in.app == appID {
			in.repos[key(owner, name)] = true
			return in.id
		}
	}
	in := &installation{id: 7_000_000 + int64(len(g.installs)) + 1, app: appID, repos: map[string]bool{key(owner, name): true}}
	g.installs = append(g.installs, in)
	return in.id
}

func (g *GitHub) routeApps(mux *http.ServeMux, prefix string) {
	mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/installation", g.repoInstallation)
	mux.HandleFunc("POST "+prefix+"/app/installations/{id}/access_tokens", g.accessToken)
}

// asApp is the App a request's JWT proves, or nil when it has answered 401; the caller holds mu.
func (g *GitHub) asApp(w http.ResponseWriter, r *http.Request) *app {
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	a, why := g.verifyJWT(tok)
	if a == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": why, "documentation_url": docsAuth, "status": "401"})
	}
	return a
}

func (g *GitHub) verifyJWT(tok string) (*app, string) {
	const undecodable = "A JSON web token could not be decoded"
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, undecodable
	}
	var head struct{ Alg string }
	var claims struct {
		Iat, Exp int64
		Iss      string
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil ||
		head.Alg != "RS256" {
		return nil, undecodable
	}
	id, _ := strconv.ParseInt(claims.Iss, 10, 64)
	a := g.apps[id]
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if a == nil || rsa.VerifyPKCS1v15(a.key, crypto.SHA256, sum[:], sig) != nil {
		return nil, undecodable
	}
	now := time.Now().Unix()
	switch {
	case claims.Exp > now+600:
		return nil, "'Expiration time' claim ('exp') is too far in the future"
	case claims.Exp <= now:
		return nil, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	case claims.Iat > now+60:
		return nil, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	}
	return a, ""
}

func (g *GitHub) repoInstallation(w http.ResponseWriter, r *http.Request) {
	g.record(r, nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.asApp(w, r)
	if a == nil {
		return
	}
	k := key(r.PathValue("owner"), r.PathValue("repo"))
	for _, in := range g.installs {
		if in.app == a.id && in.repos[k] {
			writeJSON(w, http.StatusOK, map[string]any{"id": in.id, "app_id": a.id, "target_type": "Organization",
				"repository_selection": "selected", "account": g.userJSON(r.PathValue("owner"), "Organization")})
			return
		}
	}
	notFound(w)
}

func (g *GitHub) accessToken(w http.ResponseWriter, r *http.Request) {
	g.record(r, nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.asApp(w, r)
	if a == nil {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	for _, in := range g.installs {
		if in.id == id && in.app == a.id {
			var b [20]byte
			_, _ = rand.Read(b[:])
			tok := "ghs_" + hex.EncodeToString(b[:])
			if g.installTokens == nil {
				g.installTokens = map[string]*installation{}
			}
			g.installTokens[tok] = in
			writeJSON(w, http.StatusCreated, map[string]any{"token": tok,
				"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "repository_selection": "selected",
				"permissions": map[string]string{"issues": "write", "pull_requests": "write", "contents": "write", "metadata": "read"}})
			return
		}
	}
	notFound(w)
}
