// Package api is orch's programmatic surface: an HTTP API under /api/v1 (JSON, described by the OpenAPI document it
// serves) and an MCP server with the same operations as tools. A script, a CI job or an assistant drives runs through
// it the way a person does in Slack or the web view: runs start through runs.Front, questions are answered through
// escalation.Resolve and runs are cancelled through escalation.Abort, so the first answer wins wherever it comes from
// and every decision is audited with the person it came from.
//
// Access. With tokens configured (ORCH_API_TOKENS), every request needs one (`Authorization: Bearer TOKEN`), loopback
// included: a page a person opens in a browser can reach loopback too. Each token is named, and the name is the person
// in the audit. Without tokens only loopback clients are served, as the person running orch, and only under the
// names of this machine (which stops DNS rebinding) and never to a request a browser marks as cross-site. Each person
// has a request rate of their own.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// Prefix is where the API is served.
const Prefix = "/api/v1/"

// Via names the API in the audit trail.
const Via = "api"

// Config is what the API needs.
type Config struct {
	Store *store.Store
	Queue escalation.Enqueuer
	// Front starts runs; nil for a server that starts none (POST /runs then says so).
	Front *runs.Front
	// Diffs shows a run's work; nil when the runs' repositories cannot be read here.
	Diffs runs.Differ
	// Tokens are ORCH_API_TOKENS. Empty: loopback clients only, as LocalUser.
	Tokens []Token
	// LocalUser is the person a loopback request is, without tokens: the one running orch.
	LocalUser string
	// PublicURL is ORCH_PUBLIC_URL: a run's web page is linked from there.
	PublicURL string
	// Rate and Burst bound each person's requests (default 20 a second, bursts of 40).
	Rate  rate.Limit
	Burst int
	Log   *slog.Logger
	Now   func() time.Time
}

// Token is one named API token.
type Token struct {
	Name   string
	secret [sha256.Size]byte
}

// minTokenLen is the shortest token taken: a token is a password that never meets a person's memory, so there is no
// reason for a short one.
const minTokenLen = 16

// ParseTokens reads ORCH_API_TOKENS: name:token[,name:token…]. A name is the person the audit names, a token at least
// 16 characters; names and tokens are each used once.
func ParseTokens(s string) ([]Token, error) {
	var out []Token
	names := map[string]bool{}
	secrets := map[[sha256.Size]byte]bool{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, secret, ok := strings.Cut(part, ":")
		name, secret = strings.TrimSpace(name), strings.TrimSpace(secret)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("ORCH_API_TOKENS: entry %d is not name:token", i+1)
		case !validName(name):
			return nil, fmt.Errorf("ORCH_API_TOKENS: entry %d: the name %q is not a plain name (letters, digits, . _ @ -)", i+1, name)
		case len(secret) < minTokenLen:
			return nil, fmt.Errorf("ORCH_API_TOKENS: the token of %s is %d characters; use at least %d (e.g. openssl rand -hex 24)", name, len(secret), minTokenLen)
		case names[name]:
			return nil, fmt.Errorf("ORCH_API_TOKENS: %s is named twice", name)
		}
		sum := sha256.Sum256([]byte(secret))
		if secrets[sum] {
			return nil, fmt.Errorf("ORCH_API_TOKENS: the token of %s is also another name's: each person needs a token of their own", name)
		}
		names[name], secrets[sum] = true, true
		out = append(out, Token{Name: name, secret: sum})
	}
	return out, nil
}

func validName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@-", r)) {
			return false
		}
	}
	return true
}

// Server serves the API.
type Server struct {
	cfg    Config
	limits sync.Map // person → *rate.Limiter
	cross  *http.CrossOriginProtection
}

// New builds the API.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Queue == nil {
		return nil, errors.New("api: no store or queue")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LocalUser == "" {
		cfg.LocalUser = "local"
	}
	if cfg.Rate == 0 {
		cfg.Rate = 20
	}
	if cfg.Burst == 0 {
		cfg.Burst = 40
	}
	return &Server{cfg: cfg, cross: http.NewCrossOriginProtection()}, nil
}

// route is one operation of the API; the OpenAPI document describes exactly these (a test holds them together).
type route struct {
	method, path string
	handle       func(w http.ResponseWriter, r *http.Request, who string)
}

func (s *Server) routes() []route {
	return []route{
		{"GET", "/api/v1/health", s.health},
		{"GET", "/api/v1/openapi.json", s.openapi},
		{"GET", "/api/v1/runs", s.listRuns},
		{"POST", "/api/v1/runs", s.createRun},
		{"GET", "/api/v1/runs/{id}", s.getRun},
		{"POST", "/api/v1/runs/{id}/cancel", s.cancelRun},
		{"GET", "/api/v1/runs/{id}/diff", s.diff},
		{"GET", "/api/v1/runs/{id}/events", s.events},
		{"GET", "/api/v1/runs/{id}/question", s.question},
		{"POST", "/api/v1/runs/{id}/answer", s.answer},
		{"GET", "/api/v1/questions", s.listQuestions},
	}
}

// Handler serves every route under Prefix, each behind the access rules; anything else under Prefix is a problem:
// 405 for a path served with other methods, 404 otherwise.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.path, s.guard(rt.handle))
	}
	mux.Handle(Prefix, s.guard(func(w http.ResponseWriter, r *http.Request, _ string) {
		if allow := s.methodsOf(r.URL.Path); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			problem(w, http.StatusMethodNotAllowed, "Method not allowed", fmt.Sprintf("%s takes %s", r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		problem(w, http.StatusNotFound, "No such endpoint", fmt.Sprintf("%s %s is not an endpoint of this API; GET %sopenapi.json lists them", r.Method, r.URL.Path, Prefix))
	}))
	return mux
}

// methodsOf lists the methods the routes take at path.
func (s *Server) methodsOf(path string) []string {
	var out []string
	for _, rt := range s.routes() {
		if samePath(rt.path, path) {
			out = append(out, rt.method)
		}
	}
	return out
}

// samePath reports whether path is an instance of a route's pattern, whose {wildcards} stand for one segment.
func samePath(pattern, path string) bool {
	ps, qs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(qs) {
		return false
	}
	for i, p := range ps {
		if !(strings.HasPrefix(p, "{") && qs[i] != "") && p != qs[i] {
			return false
		}
	}
	return true
}

// guard applies the access rules, then the person's rate, then the handler.
func (s *Server) guard(next func(w http.ResponseWriter, r *http.Request, who string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		who, status, why := s.authenticate(r)
		if status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="orch"`)
			}
			problem(w, status, http.StatusText(status), why)
			return
		}
		if !s.limiter(who).Allow() {
			w.Header().Set("Retry-After", "1")
			problem(w, http.StatusTooManyRequests, "Too many requests", fmt.Sprintf("%s is over %g requests a second; slow down", who, float64(s.cfg.Rate)))
			return
		}
		next(w, r, who)
	})
}

// authenticate says who a request is, or why it is refused (a status and the words).
func (s *Server) authenticate(r *http.Request) (who string, status int, why string) {
	if len(s.cfg.Tokens) > 0 {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(got) == "" {
			return "", http.StatusUnauthorized, "this API needs a token: Authorization: Bearer TOKEN (ORCH_API_TOKENS)"
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		name := ""
		for _, t := range s.cfg.Tokens { // every token compared, in constant time: no early way out to time
			if subtle.ConstantTimeCompare(sum[:], t.secret[:]) == 1 {
				name = t.Name
			}
		}
		if name == "" {
			return "", http.StatusUnauthorized, "the token is not one of ORCH_API_TOKENS"
		}
		return name, 0, ""
	}
	if !loopbackClient(r) || proxied(r) {
		return "", http.StatusForbidden, "without ORCH_API_TOKENS the API serves this machine only (not through a proxy)"
	}
	if !loopbackHost(r.Host) {
		// As the web view answers a name not its own: 421, the name is wrong, not the person.
		return "", http.StatusMisdirectedRequest, fmt.Sprintf("the API answers to localhost names only without ORCH_API_TOKENS, not %q", r.Host)
	}
	// A page in a browser can send to loopback; a request the browser marks as from another site is refused whatever
	// its method, and a state change must be JSON, which a page can send elsewhere only after a preflight this server
	// never grants.
	if err := s.cross.Check(r); err != nil || r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "", http.StatusForbidden, "a request from another site is refused without ORCH_API_TOKENS"
	}
	return s.cfg.LocalUser, 0, ""
}

func (s *Server) limiter(who string) *rate.Limiter {
	if l, ok := s.limits.Load(who); ok {
		return l.(*rate.Limiter)
	}
	l, _ := s.limits.LoadOrStore(who, rate.NewLimiter(s.cfg.Rate, s.cfg.Burst))
	return l.(*rate.Limiter)
}

// loopbackClient reports whether the request came from this machine.
func loopbackClient(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// proxied reports whether a request says it came through a proxy: a proxy on this machine makes every client a
// loopback one (and, with nginx's default, its Host a loopback address), so without tokens such a request is refused.
func proxied(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// loopbackHost reports whether a Host header names this machine: localhost (or a name under .localhost) or a
// loopback address, with any port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// problemType is the media type of an error (RFC 9457).
const problemType = "application/problem+json"

// Problem is an error as the API answers it (RFC 9457), with members of its own where a client can act on them.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// AnsweredBy, AnsweredVia, AnsweredAt and Answer say who answered a question first (409 on an answer).
	AnsweredBy  string     `json:"answered_by,omitempty"`
	AnsweredVia string     `json:"answered_via,omitempty"`
	AnsweredAt  *time.Time `json:"answered_at,omitempty"`
	Answer      string     `json:"answer,omitempty"`
}

func problem(w http.ResponseWriter, status int, title, detail string) {
	writeProblem(w, Problem{Type: "about:blank", Title: title, Status: status, Detail: detail})
}

func writeProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", problemType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// maxBody bounds a request's JSON: the largest is a task in words (16 KiB) or an answer.
const maxBody = 64 << 10

// readJSON decodes a request's body into v: JSON only (415 otherwise), bounded, no unknown fields, one value. It
// answers the problem itself and reports false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		problem(w, http.StatusUnsupportedMediaType, "JSON only", "send the body as Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			problem(w, http.StatusRequestEntityTooLarge, "Body too large", fmt.Sprintf("a request body is at most %d bytes", maxBody))
			return false
		}
		problem(w, http.StatusBadRequest, "Not the JSON this endpoint takes", err.Error())
		return false
	}
	if dec.More() {
		problem(w, http.StatusBadRequest, "Not the JSON this endpoint takes", "the body holds more than one JSON value")
		return false
	}
	return true
}

// unavailable answers a store that did not answer: the client may try again.
func (s *Server) unavailable(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.cfg.Log.Warn("api: "+what, "err", err)
	w.Header().Set("Retry-After", "1")
	problem(w, http.StatusServiceUnavailable, "The store does not answer", what+": try again in a moment")
}

// cents rounds dollars to the cent for display, keeping sub-cent costs visible as what they are.
func cents(usd float64) float64 { return math.Round(usd*10000) / 10000 }
