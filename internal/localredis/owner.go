package localredis

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/orchrun/orch/internal/owned"
)

const (
	// saveEvery is how often a changed store is saved; a crash loses at most this much that no Sync covered.
	saveEvery = 200 * time.Millisecond
	// expireEvery is how often TTLs count down. miniredis can follow the clock on every command (ClockTTL), but
	// then every command walks every key, and a save pass, which runs a few commands per key, walks them all for
	// each key. A key expires up to this much late instead.
	expireEvery = 100 * time.Millisecond
	// syncCommand asks the serving process to save now. Its arguments are the tokens of the processes that served
	// the caller's connections since its last sync (see owner.sync).
	syncCommand = "ORCH.SYNC"
	// syncTimeout bounds a save asked for over the network, whose caller may have gone.
	syncTimeout = time.Minute
	// internalClient names the in-process peer a save pass reads through, so its commands do not count as changes.
	internalClient = "orch-embedded-save"
	// ownersKept is how many past serving processes the owners file remembers.
	ownersKept = 32
)

// owner is the part of Embedded that exists while this process serves the store: the server, the saver and the
// files. One save pass runs at a time (sem): the background saver, Sync, ORCH.SYNC and Close take turns.
type owner struct {
	dir   string     // for messages
	files *owned.Dir // the directory, through which every file is made and read
	log   *slog.Logger
	mr    *miniredis.Miniredis
	addr  string
	token string         // identifies this serving process in redis.addr and the owners file
	lost  map[string]int // tokens of earlier serving processes that ended without saving, with their pids

	// writes counts write commands from clients, before they run: a save is due when it moved.
	writes atomic.Uint64
	// flags name the streams that may have changed other than by appending since a save read them (touched.go).
	flags *flags

	sem  chan struct{}
	stop chan struct{} // closed when Close begins
	done chan struct{} // closed when the saver has stopped

	// Guarded by sem.
	local       *local // runs the save pass's reads
	marks       map[string]*mark
	saved       map[string]string // the large strings as saved, to patch (delta.go)
	journal     *journalWriter
	gen         uint64
	snapSize    int64
	snapKeys    int
	compactMin  int64
	savedWrites uint64
	trailing    bool
	err         error // of the last save pass
	warned      map[string]bool
	askedOnly   bool // saves run only when asked (Sync, Close), never on the timer: for tests that read the journal
}

// startOwner serves the store in dir; the caller holds the directory's lock. It loads the saved state, makes the
// files on disk whole again if they were not, and publishes the server's address.
func startOwner(dir string, files *owned.Dir, log *slog.Logger) (*owner, []string, error) {
	o := &owner{
		dir: dir, files: files, log: log, token: newToken(), mr: miniredis.NewMiniRedis(),
		sem: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		compactMin: compactAtLeast, warned: map[string]bool{}, flags: newFlags(),
	}
	ld, err := loadState(files, o.mr)
	if err != nil {
		return nil, nil, err
	}
	if err := o.mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, fmt.Errorf("starting embedded redis: %w", err)
	}
	started := false
	defer func() {
		if !started {
			o.mr.Close()
			if o.journal != nil {
				o.journal.f.Close()
			}
		}
	}()
	o.addr = o.mr.Addr()
	o.local = newLocal(o.mr.Server())
	o.gen, o.snapSize, o.snapKeys = ld.gen, ld.snapSize, ld.snapKeys
	// Nobody else can reach the server yet (its address is not published), so this read is complete.
	c, err := o.readStore(true)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the loaded embedded store: %w", err)
	}
	if ld.compact {
		err = o.compact(c.keys)
	} else {
		o.journal, err = openJournal(files, ld.journal, ld.journalEnd)
		o.marks = make(map[string]*mark, len(c.keys))
		for i := range c.keys {
			m, _, _ := markKey(&c.keys[i], nil)
			o.marks[string(c.keys[i].Key)] = &m
		}
		o.keepSaved(c.keys, nil)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("saving the loaded embedded store: %w", err)
	}

	srv := o.mr.Server()
	if err := srv.Register(syncCommand, o.serveSync); err != nil {
		return nil, nil, err
	}
	srv.SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		if c.ClientName == internalClient || o.flags.running(c) {
			return false // the save's own reads; or a command the flags are running, seen already
		}
		readOnly := srv.IsReadOnlyCommand(cmd)
		if cmd != syncCommand && !readOnly {
			o.writes.Add(1)
		}
		return o.flags.run(srv, c, cmd, args, readOnly)
	})
	if o.lost, err = o.recordStart(); err != nil {
		return nil, nil, err
	}
	addr := fmt.Sprintf("%s\n%d\n%s\n", o.addr, os.Getpid(), o.token)
	if err := writeFileAtomic(files, addrFile, []byte(addr)); err != nil {
		return nil, nil, err
	}
	started = true
	go o.run()
	return o, ld.warnings, nil
}

// run is the background saver, and counts TTLs down.
func (o *owner) run() {
	defer close(o.done)
	save := time.NewTicker(saveEvery)
	defer save.Stop()
	expire := time.NewTicker(expireEvery)
	defer expire.Stop()
	last := time.Now()
	for {
		select {
		case <-o.stop:
			return
		case now := <-expire.C:
			o.mr.FastForward(now.Sub(last))
			last = now
			continue
		case <-save.C:
		}
		o.sem <- struct{}{}
		if !o.askedOnly && (o.writes.Load() != o.savedWrites || o.trailing || o.err != nil) {
			o.record(o.save())
		}
		<-o.sem
	}
}

// record keeps a save pass's outcome and logs when it changes: one line when saving starts failing (or fails
// differently), one when it works again, not one per pass.
func (o *owner) record(err error) {
	switch {
	case err != nil && (o.err == nil || o.err.Error() != err.Error()):
		o.log.Warn("embedded store: saving failed; orch keeps trying", "dir", o.dir, "err", err)
	case err == nil && o.err != nil:
		o.log.Info("embedded store: saving works again", "dir", o.dir)
	}
	o.err = err
}

// sync saves now. tokens name the serving processes that the caller's writes since its last sync went through: if
// one of them ended without saving, those writes may be lost, and the caller must hear it.
func (o *owner) sync(ctx context.Context, tokens []string) error {
	var lost error
	for _, t := range tokens {
		if pid, ok := o.lost[t]; ok {
			lost = fmt.Errorf("%w: the orch process (pid %d) that served state dir %s ended without saving, and what "+
				"was written through it after its last save is gone; check it or write it again", ErrMayBeLost, pid, o.dir)
			break
		}
	}
	select {
	case o.sem <- struct{}{}:
	case <-o.stop:
		if lost != nil {
			return lost
		}
		return errHandover
	case <-ctx.Done():
		return errors.Join(lost, ctx.Err())
	}
	defer func() { <-o.sem }()
	err := o.save()
	o.record(err)
	if err != nil {
		err = fmt.Errorf("%w; the serving orch process keeps the changes in memory and saves them once it can", err)
	}
	return errors.Join(lost, err)
}

// errHandover is sync's answer while this process is closing. Its last save, after it stops serving, covers every
// write it acknowledged; the caller asks again, and the next serving process confirms that the save succeeded.
var errHandover = errors.New("the orch process serving the store is closing")

// serveSync answers ORCH.SYNC: OK once everything written before it is saved; HANDOVER while this process closes; or
// an error saying what was not saved.
func (o *owner) serveSync(c *server.Peer, _ string, args []string) {
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	switch err := o.sync(ctx, args); {
	case errors.Is(err, errHandover):
		c.WriteError("HANDOVER " + err.Error())
	case err != nil:
		c.WriteError("ERR " + oneLine(err.Error()))
	default:
		c.WriteOK()
	}
}

// warnUnsaved logs, once per key, a key whose type orch does not save.
func (o *owner) warnUnsaved(key, typ string) {
	if !o.warned[key] {
		o.warned[key] = true
		o.log.Warn("embedded store: key type not saved", "key", key, "type", typ)
	}
}

// close stops serving, saves a last time, and withdraws the address. Serving stops first, so that no write is
// acknowledged after the last save. The caller unlocks the directory afterwards.
func (o *owner) close() error {
	close(o.stop)
	<-o.done
	o.sem <- struct{}{}
	o.mr.Close()
	// The last save reads through o.local, which needs no listener.
	err := o.save()
	if o.journal != nil {
		o.journal.f.Close()
	}
	o.files.Remove(addrFile)
	if err != nil {
		return fmt.Errorf("%w; the changes since the last save are lost", err)
	}
	return o.recordEnd()
}

// The owners file remembers the processes that served the directory, one per line: token, pid, and "serving",
// "closed" (it saved everything on its way out) or "lost" (it ended without that). A process that takes over from
// one still marked serving marks it lost, which is how Sync learns that writes through it may be gone.

type ownerLine struct {
	token, state string
	pid          int
}

func readOwners(files *owned.Dir) []ownerLine {
	data, err := files.ReadFile(ownersFile)
	if err != nil {
		return nil
	}
	var out []ownerLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		out = append(out, ownerLine{token: f[0], pid: pid, state: f[2]})
	}
	return out
}

func writeOwners(files *owned.Dir, lines []ownerLine) error {
	lines = lines[max(0, len(lines)-ownersKept):]
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %d %s\n", l.token, l.pid, l.state)
	}
	return writeFileAtomic(files, ownersFile, []byte(b.String()))
}

// recordStart adds this process to the owners file, marking the one before it lost if it never closed, and returns
// the tokens of all the lost ones.
func (o *owner) recordStart() (map[string]int, error) {
	lines := readOwners(o.files)
	if n := len(lines); n > 0 && lines[n-1].state == "serving" {
		lines[n-1].state = "lost"
	}
	lost := map[string]int{}
	for _, l := range lines {
		if l.state == "lost" {
			lost[l.token] = l.pid
		}
	}
	return lost, writeOwners(o.files, append(lines, ownerLine{token: o.token, pid: os.Getpid(), state: "serving"}))
}

func (o *owner) recordEnd() error {
	lines := readOwners(o.files)
	for i := range lines {
		if lines[i].token == o.token {
			lines[i].state = "closed"
		}
	}
	return writeOwners(o.files, lines)
}

func newToken() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
