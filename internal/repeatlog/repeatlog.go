// Package repeatlog is a slog.Handler that keeps a failure repeated many times a second (a Redis that went away, as
// the queue library reports it from every loop it runs) to a few lines a minute: the first of a kind is logged, the
// ones like it within a window are counted, and one line at the window's end says how many there were.
package repeatlog

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config says which records are summarized and over how long. The zero value summarizes warnings and errors over
// 30 seconds, on the real clock, redacting nothing.
type Config struct {
	// Window is how long repeats of a record are counted before one line says how many there were (default 30 s).
	// A kind that keeps failing is logged at most once per window after its first line.
	Window time.Duration
	// Summarize picks the records that are summarized; the others pass untouched (but redacted). Default: warnings
	// and errors.
	Summarize func(slog.Record) bool
	// Redact is applied to every message and string value before anything else sees them, so that neither a line
	// nor the key that groups lines holds a secret. Nil leaves them as they are.
	Redact func(string) string
	// Clock is the time: its AfterFunc ends windows. Nil is the real clock.
	Clock Clock
}

// Clock is what the handler needs of time.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels that if it has not happened yet.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// maxKinds bounds what the handler remembers: past it, new kinds are logged as they come, uncounted.
const maxKinds = 512

// Handler summarizes repeats of records before they reach the handler it wraps. Handlers made from one by WithAttrs
// and WithGroup share its memory of what was logged.
type Handler struct {
	next   slog.Handler
	prefix string // the attributes and groups added by WithAttrs and WithGroup, as they are in every key
	s      *state
}

var _ slog.Handler = (*Handler)(nil)

type state struct {
	cfg   Config
	mu    sync.Mutex
	kinds map[string]*kind
}

// kind is a record that was logged and the repeats of it counted since.
type kind struct {
	next  slog.Handler
	last  slog.Record // the latest repeat, redacted: its attributes go with the summary
	count int
	start time.Time
	stop  func() bool
}

// New returns a handler that passes records to next, summarizing repeats as cfg says.
func New(next slog.Handler, cfg Config) *Handler {
	if cfg.Window <= 0 {
		cfg.Window = 30 * time.Second
	}
	if cfg.Summarize == nil {
		cfg.Summarize = func(r slog.Record) bool { return r.Level >= slog.LevelWarn }
	}
	if cfg.Redact == nil {
		cfg.Redact = func(s string) string { return s }
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	return &Handler{next: next, s: &state{cfg: cfg, kinds: map[string]*kind{}}}
}

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	as = h.s.redactAttrs(as)
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range as {
		writeAttr(&b, a)
	}
	return &Handler{next: h.next.WithAttrs(as), prefix: b.String(), s: h.s}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), prefix: h.prefix + name + "{", s: h.s}
}

// Handle logs r unless a record like it was logged within the window, in which case it is counted.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	r = h.s.redact(r)
	if !h.s.cfg.Summarize(r) {
		return h.next.Handle(ctx, r)
	}
	key := h.key(r)
	s := h.s
	s.mu.Lock()
	if k, ok := s.kinds[key]; ok {
		k.count++
		k.last = r
		s.mu.Unlock()
		return nil
	}
	if len(s.kinds) < maxKinds {
		k := &kind{next: h.next, start: s.cfg.Clock.Now()}
		s.kinds[key] = k
		k.stop = s.cfg.Clock.AfterFunc(s.cfg.Window, func() { s.windowEnded(key, k) })
	}
	s.mu.Unlock()
	return h.next.Handle(ctx, r)
}

// windowEnded logs how many repeats a kind had in its window, and counts on for another window; a kind that had
// none is forgotten, and its next record is logged as a first.
func (s *state) windowEnded(key string, k *kind) {
	s.mu.Lock()
	if s.kinds[key] != k { // flushed meanwhile

		s.mu.Unlock()
		return
	}
	if k.count == 0 {
		delete(s.kinds, key)
		s.mu.Unlock()
		return
	}
	sum := s.summary(k)
	k.count, k.start = 0, s.cfg.Clock.Now()
	k.stop = s.cfg.Clock.AfterFunc(s.cfg.Window, func() { s.windowEnded(key, k) })
	next := k.next
	s.mu.Unlock()
	next.Handle(context.Background(), sum)
}

// summary is the line that says how many repeats k had: the latest repeat's message and attributes, and the count.
func (s *state) summary(k *kind) slog.Record {
	now := s.cfg.Clock.Now()
	took := now.Sub(k.start).Round(time.Second)
	r := slog.NewRecord(now, k.last.Level, fmt.Sprintf("%s … and %d more like it in the last %s", k.last.Message,
		k.count, took), k.last.PC)
	k.last.Attrs(func(a slog.Attr) bool { r.AddAttrs(a); return true })
	r.AddAttrs(slog.Int("repeats", k.count))
	return r
}

// Flush logs the repeats counted so far and forgets every kind: what a process that ends says before it goes.
func (h *Handler) Flush() {
	s := h.s
	s.mu.Lock()
	type pending struct {
		next slog.Handler
		r    slog.Record
	}
	var out []pending
	for key, k := range s.kinds {
		k.stop()
		if k.count > 0 {
			out = append(out, pending{k.next, s.summary(k)})
		}
		delete(s.kinds, key)
	}
	s.mu.Unlock()
	for _, p := range out {
		p.next.Handle(context.Background(), p.r)
	}
}

// key is what records of one kind have in common: their level, message and attributes with what varies between
// repeats of one failure (numbers, addresses, ports, ids) taken out. An attribute named as an id ("id", "run_id")
// is kept whole: records about two runs are two kinds.
func (h *Handler) key(r slog.Record) string {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte('|')
	b.WriteString(h.prefix)
	b.WriteByte('|')
	b.WriteString(Normalize(r.Message))
	r.Attrs(func(a slog.Attr) bool { writeAttr(&b, a); return true })
	return b.String()
}

// writeAttr writes a's key and value, normalized unless a names an id.
func writeAttr(b *strings.Builder, a slog.Attr) {
	b.WriteByte(' ')
	b.WriteString(a.Key)
	b.WriteByte('=')
	v := a.Value.Resolve().String()
	if a.Key != "id" && !strings.HasSuffix(a.Key, "_id") {
		v = Normalize(v)
	}
	b.WriteString(strconv.Quote(v))
}

var variable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\[[0-9A-Fa-f:.%\w]*:[0-9A-Fa-f:.%\w]*\](:\d+)?`), "<addr>"},                       // [::1]:6379
	{regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`), "<addr>"},                                     // 10.0.0.1:6379
	{regexp.MustCompile(`\b[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9-]+)*:\d{1,5}\b`), "<addr>"}, // redis:6379
	{regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<id>"},   // uuids
	{regexp.MustCompile(`(?i)\b(0x)?[0-9a-f]*(\d[0-9a-f]*[a-f]|[a-f][0-9a-f]*\d)[0-9a-f]*\b`), "<hex>"},    // 5f3e9a…
	{regexp.MustCompile(`\d+`), "#"},
}

// Normalize takes out of s what differs between repeats of one failure: addresses and ports, ids, numbers.
func Normalize(s string) string {
	for _, v := range variable {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

func (s *state) redact(r slog.Record) slog.Record {
	out := slog.NewRecord(r.Time, r.Level, s.cfg.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(s.redactAttr(a)); return true })
	return out
}

func (s *state) redactAttrs(as []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = s.redactAttr(a)
	}
	return out
}

// redactAttr redacts a value that reads as text: strings, errors, lists of strings and whatever prints itself; groups
// member by member. Numbers, times and durations hold no secret and keep their kind.
func (s *state) redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.cfg.Redact(v.String()))
	case slog.KindGroup:
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(s.redactAttrs(v.Group())...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, s.cfg.Redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, s.cfg.Redact(x.String()))
		case []string:
			out := make([]string, len(x))
			for i, e := range x {
				out[i] = s.cfg.Redact(e)
			}
			return slog.Any(a.Key, out)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
