// Package localredis is the in-process Redis (miniredis) that orch runs when no Redis server is configured, saved to
// the state directory and shared by the orch processes using that directory: one serves it, the others connect to
// it, and when the serving one ends another takes over from what was saved.
package localredis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/internal/flock"
	"github.com/orchrun/orch/internal/owned"
	"github.com/redis/go-redis/v9"
)

// Embedded is the in-process Redis that `orch` uses when no Redis server is configured. It is saved to files in the
// state directory (see format.go), so a later orch process sees the same runs. While one process serves the
// directory, other orch processes connect to its server, so a run waiting in one terminal can be answered from
// another; when that process ends, the next connection from one of the others makes that one serve it.
//
// Redis clients must connect through Dial, which is what makes the handover work.
type Embedded struct {
	dir   string
	files *owned.Dir // the directory, open for the Embedded's lifetime: every file is made and read through it
	log   *slog.Logger
	lock  *os.File // the directory's lock file, open for the Embedded's lifetime; held while serving

	mu      sync.Mutex
	own     *owner // nil while another process serves the directory
	addr    string
	current string          // token of the serving process this one connects to, when another one
	dialed  map[string]bool // tokens of the serving processes dialed since the last Sync, besides current
	syncer  *redis.Client   // asks the serving process to save, from a process that does not serve
	closed  bool
	warns   []string
}

const (
	snapshotFile     = "redis.json"
	journalFile      = "redis.journal"
	prevSnapshotFile = "redis.prev.json"
	prevJournalFile  = "redis.prev.journal"
	addrFile         = "redis.addr"
	ownersFile       = "owners"
	lockFile         = "lock"

	// handoverWait is how long Open waits for a process that holds the directory but does not answer: it may be
	// saving on its way out.
	handoverWait = 10 * time.Second
)

// Open opens the embedded store in dir, creating it if needed. If no other orch process serves dir, this one does:
// it loads what was saved, moving aside any damaged file (see Warnings). Otherwise it uses the serving process's
// store, after waiting briefly for one that is handing over.
//
// The directory and every file the store makes in it are made through an owned.Dir: when orch runs as root in a
// directory of someone else's (a user's repository), they are that someone's, and nothing the store does there
// follows a link out of the directory.
func Open(dir string, log *slog.Logger) (*Embedded, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	files, err := owned.OpenDir(dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("opening state dir: %w", err)
	}
	lf, err := files.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		files.Close()
		return nil, fileError("opening state dir lock", files.Path(lockFile), err)
	}
	e := &Embedded{dir: dir, files: files, log: log, lock: lf, dialed: map[string]bool{}}
	deadline := time.Now().Add(handoverWait)
	for {
		took, err := e.takeOver()
		if err != nil {
			lf.Close()
			files.Close()
			return nil, err
		}
		if took {
			return e, nil
		}
		a, err := readAddr(files)
		if err == nil {
			var conn net.Conn
			if conn, err = net.DialTimeout("tcp", a.addr, 2*time.Second); err == nil {
				conn.Close()
				e.addr = a.addr
				return e, nil
			}
		}
		if time.Now().After(deadline) {
			lf.Close()
			files.Close()
			who := "another orch process"
			if a.pid > 0 {
				who += fmt.Sprintf(" (pid %d)", a.pid)
			}
			return nil, fmt.Errorf("state dir %s is held by %s that does not answer (%v): wait for it to end, or stop it", dir, who, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// takeOver makes this process serve the directory if nobody does; false means another process holds it.
func (e *Embedded) takeOver() (bool, error) {
	locked, err := flock.TryLock(e.lock)
	if err != nil {
		return false, fmt.Errorf("locking state dir %s: %w", e.dir, err)
	}
	if !locked {
		return false, nil
	}
	o, warnings, err := startOwner(e.dir, e.files, e.log)
	if err != nil {
		flock.Unlock(e.lock)
		return false, err
	}
	for _, w := range warnings {
		e.log.Warn(w)
	}
	e.warns = append(e.warns, warnings...)
	e.own, e.addr, e.current = o, o.addr, ""
	return true, nil
}

// Dial connects to the store, for a Redis client's Dialer (network and addr are ignored). If this process serves the
// store it connects to its own server; if the process that served it has ended, this one takes over and serves it;
// otherwise it connects to the process that serves it. Errors are *net.OpError dial errors, which Redis clients
// retry: a handover in progress is over in a moment.
func (e *Embedded) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, dialError(fmt.Errorf("the embedded store in %s is closed", e.dir))
	}
	if e.own == nil {
		// The lock before the address: when the serving process has ended, its address is stale (and the port may
		// belong to something else by now), and the lock is free for this process to serve instead.
		if _, err := e.takeOver(); err != nil {
			return nil, dialError(err)
		}
	}
	var d net.Dialer
	if e.own != nil {
		return d.DialContext(ctx, "tcp", e.own.addr)
	}
	a, err := readAddr(e.files)
	if err != nil {
		return nil, dialError(fmt.Errorf("another orch process holds state dir %s but its address is unreadable: %v", e.dir, err))
	}
	conn, err := d.DialContext(ctx, "tcp", a.addr)
	if err != nil {
		return nil, err
	}
	e.addr = a.addr
	if a.token != "" {
		e.current = a.token
		e.dialed[a.token] = true
	}
	return conn, nil
}

func dialError(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

// Addr is the address of the server this process uses: its own, or the serving process's.
func (e *Embedded) Addr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.addr
}

// Owner reports whether this process serves the store now (and so must keep running for others to reach it).
func (e *Embedded) Owner() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.own != nil
}

// Warnings are the problems found with the saved state when this process loaded it (damaged files moved aside, and
// what orch started from instead), as logged.
func (e *Embedded) Warnings() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.warns...)
}

// ErrMayBeLost is the error of a Sync whose writes went through a process that ended without saving them. A Sync
// after it reports on what is written from then on.
var ErrMayBeLost = errors.New("writes may be lost")

// Sync saves everything written to the store before it and returns nil once it is on disk. In a process that does
// not serve the store, it asks the serving one. It also fails when a process that served this one's writes since
// its last Sync ended without saving them: they may be lost.
func (e *Embedded) Sync(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("the embedded store in %s is closed", e.dir)
	}
	if e.current != "" {
		e.dialed[e.current] = true
	}
	tokens := make([]string, 0, len(e.dialed))
	for t := range e.dialed {
		tokens = append(tokens, t)
	}
	clear(e.dialed)
	own := e.own
	if own == nil && e.syncer == nil {
		e.syncer = redis.NewClient(&redis.Options{
			Dialer: e.Dial, Protocol: 2, DisableIdentity: true, PoolSize: 1, ReadTimeout: syncTimeout,
			DialerRetries: HandoverDialRetries, DialerRetryTimeout: HandoverDialBackoff,
		})
	}
	syncer := e.syncer
	e.mu.Unlock()

	if own != nil {
		err := own.sync(ctx, tokens)
		if errors.Is(err, errHandover) {
			return fmt.Errorf("the embedded store in %s is closed", e.dir)
		}
		return err
	}
	args := []any{syncCommand}
	for _, t := range tokens {
		args = append(args, t)
	}
	for {
		err := syncer.Do(ctx, args...).Err()
		var rerr redis.Error
		switch {
		case err == nil:
			return nil
		case errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "HANDOVER "):
			// Asking again reaches the next serving process (maybe this one), which knows whether the last save of
			// the one closing succeeded: the tokens name it.
			select {
			case <-time.After(HandoverDialBackoff):
			case <-ctx.Done():
				return fmt.Errorf("waiting for the orch process serving state dir %s to hand over: %w", e.dir, ctx.Err())
			}
		case rerr != nil:
			msg := strings.TrimPrefix(rerr.Error(), "ERR ")
			if rest, ok := strings.CutPrefix(msg, ErrMayBeLost.Error()+": "); ok {
				return fmt.Errorf("%w: %s", ErrMayBeLost, rest)
			}
			return errors.New(msg)
		default:
			e.mu.Lock()
			for _, t := range tokens {
				e.dialed[t] = true // nobody was asked: ask next time
			}
			e.mu.Unlock()
			return fmt.Errorf("asking the orch process that serves state dir %s to save: %w", e.dir, err)
		}
	}
}

// HandoverDialRetries and HandoverDialBackoff are the go-redis dial retry settings for a client dialing through
// Dial: enough retries, close enough together, that a handover costs a blink rather than an error.
const (
	HandoverDialRetries = 50
	HandoverDialBackoff = 20 * time.Millisecond
)

// Close releases the store. If this process serves it, it stops serving, saves a last time, withdraws its address
// and unlocks the directory, in that order, so that another process can take over from exactly what was saved; the
// error is the last save's.
func (e *Embedded) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	own, syncer := e.own, e.syncer
	e.mu.Unlock()
	if syncer != nil {
		syncer.Close()
	}
	var err error
	if own != nil {
		err = own.close()
		flock.Unlock(e.lock)
	}
	e.lock.Close()
	e.files.Close()
	return err
}

// served is the content of redis.addr: where the serving process listens, its pid, and its token.
type served struct {
	addr, token string
	pid         int
}

func readAddr(files *owned.Dir) (served, error) {
	data, err := files.ReadFile(addrFile)
	if err != nil {
		return served{}, err
	}
	f := strings.Split(strings.TrimSpace(string(data)), "\n")
	a := served{addr: f[0]}
	if len(f) > 1 {
		a.pid, _ = strconv.Atoi(f[1])
	}
	if len(f) > 2 {
		a.token = f[2]
	}
	if a.addr == "" {
		return a, errors.New("it is empty")
	}
	return a, nil
}
