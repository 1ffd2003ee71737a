package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orchrun/orch/internal/safetext"
)

// The credentials orch is given (tokens, and the passwords inside URLs) must reach no terminal and no log, whatever
// error carries them: a URL that does not parse is quoted whole by Go's url package, and go-redis, slack-go and the
// OTLP exporter pass that on. So orch knows its secrets by value and takes them out of every message it prints.

// secretEnv are the variables whose whole value is a credential.
var secretEnv = []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "ORCH_WEB_TOKEN",
	"ANTHROPIC_API_KEY", "ORCH_GITHUB_TOKEN", "GITHUB_TOKEN", "ORCH_REDIS_PASSWORD"}

// urlEnv are the variables that hold a URL, whose userinfo may hold a password or a token.
var urlEnv = []string{"ORCH_REDIS_URL", "ORCH_REPO", "ORCH_GIT_PUSH", "SLACK_API_URL", "ORCH_GITHUB_API_URL",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ORCH_NOTIFY_WEBHOOK"}

// tokensEnv are the variables that hold name:token pairs (name:token,…), whose tokens are credentials.
var tokensEnv = []string{"ORCH_API_TOKENS"}

// headerEnv are the variables that hold HTTP headers (key=value,…), whose values are often credentials.
var headerEnv = []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}

// urlFlags are the flags that hold a URL.
var urlFlags = []string{"redis", "repo"}

// minSecret is the shortest value taken out of messages: a shorter one would take ordinary words with it, and a URL's
// password is hidden by its place in the URL anyway (redactURL, safetext.Redact).
const minSecret = 4

// secrets are the credentials this process was given, by value, each with where it came from.
type secrets []safetext.Secret

// add adds s, the part of name's value that is a credential ("" for the whole).
func (ss *secrets) add(name, part, s string) {
	s = strings.TrimSpace(s)
	if len(s) < minSecret {
		return
	}
	*ss = append(*ss, safetext.Secret{Name: name, Part: part, Value: s})
}

// addURL adds the credentials of a URL: its password (as written and decoded), a user name long enough to be a
// token (https://TOKEN@github.com/…), and the path of a notification webhook, which is its credential.
func (ss *secrets) addURL(name, raw string, pathIsSecret bool) {
	user, pass, hasPass, ok := urlUserinfo(raw)
	if ok {
		if hasPass {
			ss.addPassword(name, pass)
		} else if len(user) >= tokenLength {
			ss.add(name, "token", user)
		}
	}
	// A password with an unescaped '@' or '/' parses as a URL, but not as the person meant: the url package takes part
	// of it for the host or the path, and an error may quote that part. The lenient reading keeps the whole.
	if _, rest, found := strings.Cut(strings.TrimSpace(raw), "://"); found {
		if at := userinfoEnd(rest); at >= 0 {
			if _, p, has := strings.Cut(rest[:at], ":"); has {
				ss.addPassword(name, p)
			}
		}
	}
	if pathIsSecret {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && len(u.Path) > 1 {
			ss.add(name, "path", u.Path)
		} else if _, rest, found := strings.Cut(strings.TrimSpace(raw), "://"); found {
			rest = rest[userinfoEnd(rest)+1:]
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				ss.add(name, "path", rest[i:])
			}
		}
	}
}

// addPassword adds a URL's password, as written, decoded, and in the pieces that the URL's delimiters cut it into,
// for an error that quotes the host or the path that a misread password became.
func (ss *secrets) addPassword(name, p string) {
	ss.add(name, "password", p)
	if d, err := url.PathUnescape(p); err == nil && d != p {
		ss.add(name, "password", d)
	}
	if strings.ContainsAny(p, "@/:?#") {
		for _, piece := range strings.FieldsFunc(p, func(r rune) bool { return strings.ContainsRune("@/:?#", r) }) {
			ss.add(name, "password", piece)
		}
	}
}

// tokenLength is from how many characters a user name alone in a URL is taken for a token.
const tokenLength = 20

// credentialName matches the names of variables that hold a credential by the usual naming: *_TOKEN, *_SECRET*,
// *PASSWORD*, *_API_KEY, *_ACCESS_KEY, *_KEY.
var credentialName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|_KEY$)`)

// collectSecrets gathers the credentials of the environment and of the command line args; loaded adds orch.yaml's
// when it is read. Besides the variables orch reads itself, every variable of environ whose name says it holds a
// credential is one (an agent CLI's key, one passed to the agent on purpose, one the person had set), unless its value
// is a path (the file holds the credential, not the name of it); and so is the password of any URL in environ (a
// proxy's).
func collectSecrets(env func(string) string, environ []string, args []string) secrets {
	var ss secrets
	for _, k := range secretEnv {
		ss.add(k, "", env(k))
	}
	for _, k := range urlEnv {
		ss.addURL(k, env(k), k == "ORCH_NOTIFY_WEBHOOK")
	}
	for _, k := range headerEnv {
		ss.addHeaders(k, env(k))
	}
	for _, k := range tokensEnv {
		for _, pair := range strings.Split(env(k), ",") {
			if _, token, ok := strings.Cut(pair, ":"); ok {
				ss.add(k, "token", token)
			}
		}
	}
	for _, kv := range environ {
		ss.addVariable(kv)
	}
	ss.addArgs(args)
	return ss
}

// addHeaders adds the values of the NAME=VALUE,… headers of variable k, as written and unescaped.
func (ss *secrets) addHeaders(k, v string) {
	for _, kv := range strings.Split(v, ",") {
		_, v, ok := strings.Cut(kv, "=")
		if !ok {
			v = kv // "Authorization: Bearer …", written wrong, is all credential
		}
		ss.add(k, "header value", v)
		if d, err := url.PathUnescape(v); err == nil && d != v {
			ss.add(k, "header value", d)
		}
	}
}

// addVariable adds what a variable of the environment (KEY=VALUE) holds that orch does not read itself: a URL's
// password, and the value of a variable whose name says it is a credential, unless it is a path.
func (ss *secrets) addVariable(kv string) {
	k, v, ok := strings.Cut(kv, "=")
	v = strings.TrimSpace(v)
	if !ok || slices.Contains(secretEnv, k) || slices.Contains(urlEnv, k) || slices.Contains(headerEnv, k) {
		return
	}
	if strings.Contains(v, "://") {
		ss.addURL(k, v, false)
	}
	if credentialName.MatchString(k) && len(v) >= safetext.MinSecretLen && !strings.HasPrefix(v, "/") &&
		!strings.HasPrefix(v, "~") && !strings.HasPrefix(v, "./") {
		ss.add(k, "", v)
	}
}

// addArgs adds the URLs of the command line's URL flags, as --flag VALUE or --flag=VALUE.
func (ss *secrets) addArgs(args []string) {
	for i, a := range args {
		for _, f := range urlFlags {
			switch {
			case a == "--"+f && i+1 < len(args):
				ss.addURL("--"+f, args[i+1], false)
			case strings.HasPrefix(a, "--"+f+"="):
				ss.addURL("--"+f, strings.TrimPrefix(a, "--"+f+"="), false)
			}
		}
	}
}

// loaded adds the URLs orch.yaml names.
func (ss *secrets) loaded(f fileConfig) {
	ss.addURL("orch.yaml redis", f.Redis, false)
	ss.addURL("orch.yaml git.repo", f.Git.Repo, false)
	ss.addURL("orch.yaml git.push", f.Git.Push, false)
}

// scrub takes every known secret out of s, as written and as Go quotes it (%q escapes what an error message would),
// then whatever safetext.Redact recognises as one.
func (ss secrets) scrub(s string) string {
	var values []string
	for _, x := range ss {
		values = append(values, x.Value)
		if q := strconv.Quote(x.Value); q[1:len(q)-1] != x.Value {
			values = append(values, q[1:len(q)-1])
		}
	}
	// Longest first: a secret that holds another is taken out whole.
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		s = strings.ReplaceAll(s, v, "***")
	}
	return safetext.Redact(s)
}

// redactor is what takes the same secrets out of what an agent says, where it enters orch; it names a secret it
// finds by where orch got it.
func (ss secrets) redactor() *safetext.Redactor {
	return safetext.NewRedactor(ss)
}

// urlUserinfo splits the userinfo of a URL, even one that does not parse: the URL package's own reading when it
// parses, else everything between "://" and the "@" that ends the userinfo (see userinfoEnd). ok is false when there
// is no userinfo.
func urlUserinfo(raw string) (user, pass string, hasPass, ok bool) {
	raw = strings.TrimSpace(raw)
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil {
			return "", "", false, false
		}
		pass, hasPass = u.User.Password()
		return u.User.Username(), pass, hasPass, true
	}
	_, rest, found := strings.Cut(raw, "://")
	if !found {
		return "", "", false, false
	}
	at := userinfoEnd(rest)
	if at < 0 {
		return "", "", false, false
	}
	user, pass, hasPass = strings.Cut(rest[:at], ":")
	return user, pass, hasPass, true
}

// userinfoEnd is the index of the "@" that ends the userinfo of rest, a URL after its "scheme://", or -1: the last
// "@" before the query, as a password may hold '/', '#' or '@' that the person did not escape.
func userinfoEnd(rest string) int {
	if q := strings.IndexByte(rest, '?'); q >= 0 && strings.IndexByte(rest[:q], '@') >= 0 {
		rest = rest[:q]
	}
	return strings.LastIndexByte(rest, '@')
}

// redactURL hides the credentials of a URL (a password, a token used as the user name) and keeps the rest, so that a
// person can tell which server it names; a URL that does not parse is read as leniently as urlUserinfo reads it.
func redactURL(u string) string {
	user, _, hasPass, ok := urlUserinfo(u)
	if !ok || (!hasPass && len(user) < tokenLength) {
		return u
	}
	scheme, rest, _ := strings.Cut(strings.TrimSpace(u), "://")
	at := userinfoEnd(rest)
	if at < 0 {
		// Parsed with a userinfo but written without a literal "@" cannot happen; hide everything to be safe.
		return scheme + "://***"
	}
	if !hasPass {
		return scheme + "://***@" + rest[at+1:]
	}
	return scheme + "://" + user + ":***@" + rest[at+1:]
}

// scrubHandler takes the process's secrets out of every log line: its message and its attributes, errors included.
type scrubHandler struct {
	slog.Handler
	secrets secrets
}

func (h scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.secrets.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.secrets.attr(a)
	}
	return scrubHandler{h.Handler.WithAttrs(out), h.secrets}
}

func (h scrubHandler) WithGroup(name string) slog.Handler {
	return scrubHandler{h.Handler.WithGroup(name), h.secrets}
}

// Flush writes what the handler it wraps holds back (the summaries of repeated records), when it holds anything.
func (h scrubHandler) Flush() {
	if f, ok := h.Handler.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// attr scrubs the text of an attribute: strings, errors, Stringers, and groups of them.
func (ss secrets) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, ss.scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, x := range g {
			out[i] = ss.attr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, ss.scrub(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, ss.scrub(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// urlErrorDetail is what went wrong in a URL that did not parse, without the URL: the url package's error quotes it
// whole, password included.
func urlErrorDetail(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
