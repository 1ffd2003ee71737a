// Package web serves orch's web view: every run of a deployment, what each is doing and what it changed, the questions
// that wait and the forms that answer them, and the forms that start, cancel and start runs again. Pages are rendered
// on the server (they work without JavaScript); a small script on top follows a run's event stream so the page
// updates without a reload.
//
// Access: with no token the view serves loopback clients only, as the person running orch; with ORCH_WEB_TOKEN it
// serves anyone who signs in with the token. Either way it answers only to its own names (localhost and loopback
// addresses; with a token, the host of ORCH_PUBLIC_URL too), which is what stops a page elsewhere from reaching it
// through DNS rebinding. Every form carries a CSRF token, and answers go through the same atomic
// resolution as the terminal and Slack, so the first answer wins wherever it comes from. Starting and cancelling
// need the same right as answering (AllowedUsers); runs start through runs.Front, which checks what a person asks for
// the same way on every surface.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config is what the web view needs.
type Config struct {
	Store *store.Store
	Queue escalation.Enqueuer
	// Front starts the runs people ask for in the view; nil serves a view that only follows and answers runs.
	Front *runs.Front
	// Diffs shows a run's work; nil when there is no repository to read it from.
	Diffs runs.Differ
	// Token is ORCH_WEB_TOKEN: when set, people sign in with it; when empty, only loopback clients are served.
	Token string
	// PublicURL is ORCH_PUBLIC_URL, where people reach the view from elsewhere: with Token set, its host is served
	// besides the loopback names (see servedHost).
	PublicURL string
	// AllowedUsers may answer when the person is known (ORCH_ALLOWED_USERS); empty means anyone signed in.
	AllowedUsers []string
	// LocalUser answers for a loopback view without a token: the person running orch.
	LocalUser string
	Log       *slog.Logger
	Now       func() time.Time
}

// Server is the web view.
type Server struct {
	cfg   Config
	key   []byte // signs sessions and CSRF tokens
	pages map[string]*template.Template
	// public is the host of PublicURL, served with a token besides the loopback names; "" when there is none.
	public string
}

// ErrNeedsToken is returned for a view bound beyond loopback without ORCH_WEB_TOKEN.
var ErrNeedsToken = errors.New("the web view is bound beyond loopback: set ORCH_WEB_TOKEN so people sign in, or bind it to 127.0.0.1")

// CheckAddr refuses to serve the view on a non-loopback address without a token.
func CheckAddr(addr, token string) error {
	if token != "" || loopbackAddr(addr) {
		return nil
	}
	return fmt.Errorf("%w (address %s)", ErrNeedsToken, addr)
}

// loopbackAddr reports whether a listen address only accepts local connections: "127.0.0.1:3080", "[::1]:0",
// "localhost:3080". ":3000" and "0.0.0.0:3000" listen everywhere.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// New builds the view; its pages are parsed once here.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: no store")
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
	public, err := publicName(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, pages: map[string]*template.Template{}, public: public}
	if cfg.Token != "" {
		// Sessions survive a restart and work across replicas: the key derives from the token they all share.
		mac := hmac.New(sha256.New, []byte(cfg.Token))
		mac.Write([]byte("orch web session key"))
		s.key = mac.Sum(nil)
	} else {
		s.key = make([]byte, 32)
		rand.Read(s.key)
	}
	for _, page := range []string{"runs", "run", "questions", "login", "message", "new", "diff", "spend"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/answer.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parsing %s: %w", page, err)
		}
		s.pages[page] = t
	}
	return s, nil
}

// Handler routes the view's pages. Mount it at "/" beside other handlers: its routes are /, /runs/…, /questions,
// /login, /logout and /static/…. Every one of them answers only to the view's own names (see hosts.go); the handlers
// mounted beside it (Slack's endpoints, health, metrics) are reached under any name.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", s.handleLoginPage)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.signedIn(s.handleLogout))
	mux.HandleFunc("GET /{$}", s.signedIn(s.handleRuns))
	mux.HandleFunc("GET /questions", s.signedIn(s.handleQuestions))
	mux.HandleFunc("GET /spend", s.signedIn(s.handleSpend))
	mux.HandleFunc("GET /runs/new", s.signedIn(s.handleNewRun))
	mux.HandleFunc("POST /runs", s.signedIn(s.handleStart))
	mux.HandleFunc("GET /runs/{id}", s.signedIn(s.handleRun))
	mux.HandleFunc("GET /runs/{id}/diff", s.signedIn(s.handleDiff))
	mux.HandleFunc("POST /runs/{id}/answer", s.signedIn(s.handleAnswer))
	mux.HandleFunc("POST /runs/{id}/cancel", s.signedIn(s.handleCancel))
	mux.HandleFunc("POST /runs/{id}/rerun", s.signedIn(s.handleRerun))
	mux.HandleFunc("GET /runs/{id}/events", s.signedIn(s.handleEvents))
	return s.secured(s.hosts(s.local(mux)))
}

// secured sets the headers every page gets: no framing, no sniffing, scripts and styles only from the view itself.
func (s *Server) secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// local refuses clients from elsewhere when there is no token: such a view is the local user's alone. A request that
// says it came through a proxy is from elsewhere too: a reverse proxy on this machine makes every client a loopback
// one, and with nginx's default (proxy_set_header Host $proxy_host) its Host is the loopback upstream, so neither
// the address nor the name would tell.
func (s *Server) local(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" && (!loopbackClient(r) || proxied(r)) {
			http.Error(w, "This web view serves this machine only, not through a proxy. Set ORCH_WEB_TOKEN to let others sign in.", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// proxied reports whether a request carries a proxy's forwarding headers (RFC 7239 Forwarded, or the de facto
// X-Forwarded-* and X-Real-IP).
func proxied(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

func loopbackClient(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// person is who is looking: their name (for the audit trail) and whether the view knows who they are.
type person struct {
	Name  string
	Known bool // signed in with a name, or the local user
	CSRF  string
	Token bool // the view has a token: show "sign out"
}

// startKey holds when the request came in, for the Server-Timing header of its page.
type startKey struct{}

// signedIn serves the page to a person with a session (or anyone local, without a token), and sends others to the
// sign-in form.
func (s *Server) signedIn(next func(http.ResponseWriter, *http.Request, person)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), startKey{}, time.Now()))
		p := person{Name: s.cfg.LocalUser, Known: true, Token: s.cfg.Token != ""}
		if s.cfg.Token != "" {
			name, ok := s.session(r)
			if !ok {
				if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") {
					http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				http.Error(w, "sign in first", http.StatusUnauthorized)
				return
			}
			p.Name, p.Known = name, name != ""
			if name == "" {
				p.Name = "web user"
			}
		}
		p.CSRF = s.csrfToken(w, r)
		if r.Method == http.MethodPost && !s.validCSRF(r, p.CSRF) {
			http.Error(w, "This form has expired or did not come from this page: reload the page and try again.", http.StatusForbidden)
			return
		}
		next(w, r, p)
	}
}

const (
	sessionCookie = "orch_session"
	csrfCookie    = "orch_csrf"
	sessionTTL    = 12 * time.Hour
)

// newSession is a cookie value naming the person, signed: name, expiry, MAC.
func (s *Server) newSession(name string, now time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(name)) + "." + fmt.Sprint(now.Add(sessionTTL).Unix())
	return payload + "." + s.sign(payload)
}

// session reads and checks the session cookie, and returns the signed-in person's name.
func (s *Server) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 || !hmac.Equal([]byte(c.Value[i+1:]), []byte(s.sign(c.Value[:i]))) {
		return "", false
	}
	enc, exp, ok := strings.Cut(c.Value[:i], ".")
	var until int64
	if _, err := fmt.Sscan(exp, &until); !ok || err != nil || s.cfg.Now().Unix() > until {
		return "", false
	}
	name, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", false
	}
	return string(name), true
}

func (s *Server) sign(payload string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// csrfToken is the token every form of this browser carries: a random value kept in a cookie (double submit),
// signed so that a cookie planted by a sibling subdomain cannot pass.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil {
		if v, ok := s.checkedCSRF(c.Value); ok {
			return v
		}
	}
	b := make([]byte, 18)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v + "." + s.sign("csrf:"+v), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return v
}

func (s *Server) checkedCSRF(cookie string) (string, bool) {
	v, mac, ok := strings.Cut(cookie, ".")
	return v, ok && hmac.Equal([]byte(mac), []byte(s.sign("csrf:"+v)))
}

// validCSRF checks a form against the browser's token, and that a browser that says where the form came from says
// this site.
func (s *Server) validCSRF(r *http.Request, want string) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameHost(o, r.Host) {
		return false
	}
	got := r.PostFormValue("csrf")
	c, err := r.Cookie(csrfCookie)
	if err != nil || got == "" {
		return false
	}
	v, ok := s.checkedCSRF(c.Value)
	return ok && v == want && subtle.ConstantTimeCompare([]byte(got), []byte(v)) == 1
}

func sameHost(origin, host string) bool {
	_, rest, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(rest, host)
}

// mayAnswer reports whether the person may answer questions — and start and cancel runs, which need the same right:
// anyone the view serves, unless ORCH_ALLOWED_USERS names who may and the person is not among them.
func (s *Server) mayAnswer(p person) bool {
	if len(s.cfg.AllowedUsers) == 0 {
		return true
	}
	return p.Known && slices.Contains(s.cfg.AllowedUsers, p.Name)
}

func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", map[string]any{"Next": safeNext(r.URL.Query().Get("next")), "CSRF": s.csrfToken(w, r)})
}

// handleLogin signs a person in with the token. The name is theirs to give (their Slack user id, for
// ORCH_ALLOWED_USERS); the token is what proves they may look.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	csrf := s.csrfToken(w, r)
	next := safeNext(r.PostFormValue("next"))
	if !s.validCSRF(r, csrf) {
		http.Error(w, "This form has expired: reload the page and try again.", http.StatusForbidden)
		return
	}
	token, name := r.PostFormValue("token"), strings.TrimSpace(r.PostFormValue("name"))
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) != 1 {
		s.cfg.Log.Warn("web sign-in refused", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Next": next, "CSRF": csrf, "Error": "That token is not this deployment's ORCH_WEB_TOKEN."})
		return
	}
	if len(name) > 80 {
		name = name[:80]
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.newSession(name, s.cfg.Now()), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request, _ person) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}
