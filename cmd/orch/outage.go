package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// storePatience is how long a command that follows a run waits for a store that stopped answering.
const storePatience = 2 * time.Minute

// redisWatch knows whether Redis answers, from what this process's own commands meet: it sits in the Redis client's
// hooks, under the store, the queue and the queue library alike, so it knows before any of them reports a failure.
type redisWatch struct {
	away atomic.Bool
	held atomic.Int64 // log lines held back from the terminal while Redis was away
}

var _ redis.Hook = (*redisWatch)(nil)

func (w *redisWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if unreachable(err) {
			w.away.Store(true)
		}
		return c, err
	}
}

func (w *redisWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		w.saw(err)
		return err
	}
}

func (w *redisWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		w.saw(err)
		return err
	}
}

// saw notes what a command's outcome says of Redis: a reply (an error reply included) is Redis answering.
func (w *redisWatch) saw(err error) {
	var reply redis.Error
	switch {
	case unreachable(err):
		w.away.Store(true)
	case err == nil, errors.As(err, &reply):
		w.away.Store(false)
	}
}

// takeHeld is how many log lines were held back since it was last asked.
func (w *redisWatch) takeHeld() int { return int(w.held.Swap(0)) }

// unreachable reports whether err says that Redis could not be reached or did not answer (as opposed to a reply,
// a cancelled command, or a client this process closed). A Redis still loading its data does not answer yet.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return strings.HasPrefix(reply.Error(), "LOADING ") || strings.HasPrefix(reply.Error(), "MASTERDOWN ")
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// heldBack is the one-shot commands' log while Redis is away: the warnings and errors logged then (the queue
// library's loops, orch's own background work, many a second) would bury the one line that says what orch waits for,
// so they are counted instead, and the line that says Redis is back says how many. Services log everything.
type heldBack struct {
	next  slog.Handler
	watch *redisWatch
}

func (h heldBack) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h heldBack) Handle(ctx context.Context, r slog.Record) error {
	if h.watch.away.Load() && r.Level >= slog.LevelWarn {
		h.watch.held.Add(1)
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h heldBack) WithAttrs(as []slog.Attr) slog.Handler {
	return heldBack{next: h.next.WithAttrs(as), watch: h.watch}
}

func (h heldBack) WithGroup(name string) slog.Handler {
	return heldBack{next: h.next.WithGroup(name), watch: h.watch}
}

func (h heldBack) Flush() {
	if f, ok := h.next.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// outage is what a follower's terminal says when the store stops answering and when it is back.
type outage struct {
	store    string        // "Redis at 127.0.0.1:6379", "The store in .orch"
	patience time.Duration // how long the follower waits
	held     func() int    // log lines held back while it was away
}

func (o outage) away(err error) string {
	return fmt.Sprintf("%s does not answer (%s); waiting for it (up to %s)…", o.name(), cause(err), short(o.patience))
}

func (o outage) back(d time.Duration) string {
	msg := fmt.Sprintf("%s is back after %s", o.name(), d.Round(time.Second))
	if o.held != nil {
		if n := o.held(); n > 0 {
			msg += fmt.Sprintf(" (%s logged meanwhile not shown; ORCH_LOG_LEVEL=warn shows them)", jobs.Count(n, "warning"))
		}
	}
	return msg + "."
}

func (o outage) name() string {
	if o.store == "" {
		return "Redis"
	}
	return o.store
}

// cause is the innermost of err's wrapped errors, redacted and on one line: the words that say what went wrong
// ("connection refused"), without the layers that say what orch was doing.
func cause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return safetext.OneLine(safetext.Redact(err.Error()), 160)
}

// short writes a duration as people do: 2m, 90s, 1h30m.
func short(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
