package localredis

import (
	"strconv"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2/server"
)

// A save pass reads only the new entries of a stream (its tail) when the stream can only have gained entries after
// its last saved one and lost entries since the pass that last read it: a run's event stream grows with every step,
// and reading it whole on every pass made each step cost more than the one before. Lost entries the pass sees itself:
// the stream then holds fewer than the saved entries and the new ones, and is read whole (addTail). What could pass
// that check is a stream with entries it did not have at ids up to its last saved one: the key deleted and made again
// with explicit ids, replaced, renamed onto, or emptied and filled again (the embedded server, unlike Redis, accepts
// any id above a stream's last entry, so XDEL, XTRIM, and an XADD whose trim may leave nothing, can open the way).
// The server's pre-hook rules that out:
// it sees every command before it runs, including each command a script calls and each command queued in a
// transaction. A command that can do it (or one the hook does not know) is run by the hook itself, which flags its
// keys once it has run (every key, for one it does not know); a transaction's flags are raised again when its EXEC
// has run. A pass reads a flagged stream whole. After reading, it waits for the commands that were running to raise
// their flags (settle), and reads again what a flag raised since it began names: that command may have run before
// the pass read.

// flags are the keys flagged since the passes that read them.
type flags struct {
	mu      sync.Mutex
	drained *sync.Cond        // signalled when an active count falls to 0
	seq     uint64            // counts flags; every flag gets the next
	keys    map[string]uint64 // a flagged key, with the seq of its last flag
	all     uint64            // seq of the last flag of every key; 0 when none is pending
	tx      map[*server.Peer]*queued
	inside  map[*server.Peer]bool // connections whose command the hook is running
	// active counts the commands between their start and their flags, in two generations: settle moves new
	// commands to the other one and waits for its own to end.
	active [2]int
	gen    int
}

// queued is what a connection's transaction may change, while it is open (MULTI to EXEC or DISCARD): flagged again
// when its EXEC has run.
type queued struct {
	open bool
	keys []string
	all  bool
}

func newFlags() *flags {
	f := &flags{keys: map[string]uint64{}, tx: map[*server.Peer]*queued{}, inside: map[*server.Peer]bool{}}
	f.drained = sync.NewCond(&f.mu)
	return f
}

// run is the pre-hook's part for client c's command: one that can change a stream other than by appending is run
// here, then its keys are flagged, and run reports true (done). readOnly is the server's word on cmd.
func (f *flags) run(srv *server.Server, c *server.Peer, cmd string, args []string, readOnly bool) bool {
	f.mu.Lock()
	keys, all := f.changes(c, cmd, args, readOnly)
	if len(keys) == 0 && !all {
		f.mu.Unlock()
		return false
	}
	g := f.gen % 2
	f.active[g]++
	f.inside[c] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.inside, c)
		f.flag(keys, all)
		if f.active[g]--; f.active[g] == 0 {
			f.drained.Broadcast()
		}
	}()
	srv.Dispatch(c, append([]string{cmd}, args...))
	return true
}

// running reports whether the command client c sends is the one run brings through the hook again.
func (f *flags) running(c *server.Peer) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inside[c]
}

// changes is what cmd may change, keeping account of c's transaction. The caller holds f.mu.
func (f *flags) changes(c *server.Peer, cmd string, args []string, readOnly bool) (keys []string, all bool) {
	tx := f.tx[c]
	switch cmd {
	case "MULTI":
		if tx == nil {
			tx = &queued{}
			f.tx[c] = tx
			c.OnDisconnect(f.forget(c))
		}
		tx.open = true
		return nil, false
	case "DISCARD", "EXEC":
		if tx == nil || !tx.open {
			return nil, false
		}
		keys, all = tx.keys, tx.all
		*tx = queued{}
		if cmd == "DISCARD" {
			return nil, false
		}
		return keys, all
	}
	if readOnly {
		return nil, false
	}
	keys, all = changesStreams(cmd, args)
	if tx != nil && tx.open {
		tx.keys = append(tx.keys, keys...)
		tx.all = tx.all || all
	}
	return keys, all
}

// forget drops a connection's transaction state when the connection ends.
func (f *flags) forget(c *server.Peer) func() {
	return func() {
		f.mu.Lock()
		delete(f.tx, c)
		f.mu.Unlock()
	}
}

// flag raises the flags of keys, or of every key. The caller holds f.mu.
func (f *flags) flag(keys []string, all bool) {
	for _, k := range keys {
		f.seq++
		f.keys[k] = f.seq
	}
	if all {
		f.seq++
		f.all = f.seq
	}
}

// flagMark is the flags as a pass begins: the pass reads whole every stream flagged up to seq.
type flagMark struct {
	seq  uint64
	all  bool
	keys map[string]bool
}

func (m flagMark) whole(key string) bool { return m.all || m.keys[key] }

func (f *flags) mark() flagMark {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := flagMark{seq: f.seq, all: f.all != 0, keys: make(map[string]bool, len(f.keys))}
	for k := range f.keys {
		m.keys[k] = true
	}
	return m
}

// settle waits until every command the hook started running before it has raised its flags.
func (f *flags) settle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gen % 2
	f.gen++
	for f.active[g] > 0 {
		f.drained.Wait()
	}
}

// since reports whether a flag raised after m covers key. Call it after settle.
func (f *flags) since(m flagMark, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all > m.seq || f.keys[key] > m.seq
}

// clear drops the flags up to m, once a pass that began at m has saved what it read. Flags of keys it did not
// know the state of (unsure) stay, and so does the flag of every key unless the pass read the whole store.
func (f *flags) clear(m flagMark, unsure map[string]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, seq := range f.keys {
		if seq <= m.seq && !unsure[k] {
			delete(f.keys, k)
		}
	}
	if f.all <= m.seq && len(unsure) == 0 {
		f.all = 0
	}
}

// changesStreams names the keys cmd can make into a stream with entries it did not have before its last one: all
// when it cannot tell. A command that acts on one type other than a stream and refuses any other (HSET on a stream
// fails with WRONGTYPE) cannot, nor can one that only adds entries after a stream's last or deletes entries, nor one
// that names no key.
func changesStreams(cmd string, args []string) (keys []string, all bool) {
	switch cmd {
	case "XADD":
		if len(args) > 0 && xaddMayEmpty(args[1:]) {
			return args[:1], false
		}
		return nil, false
	case "DEL", "UNLINK":
		return args, false
	case "MSET":
		for i := 0; i < len(args); i += 2 {
			keys = append(keys, args[i])
		}
		return keys, false
	case "SET", "SETEX", "PSETEX", "RESTORE", "MOVE", "XDEL", "XTRIM",
		// a TTL in the past deletes the key
		"EXPIRE", "EXPIREAT", "PEXPIRE", "PEXPIREAT",
		// the destination is replaced, whatever its type
		"SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZRANGESTORE",
		"GEOSEARCHSTORE", "PFMERGE":
		return args[:min(1, len(args))], false
	case "BITOP": // BITOP op destkey key...
		return args[min(1, len(args)):min(2, len(args))], false
	case "RENAME", "RENAMENX", "COPY":
		return args[:min(2, len(args))], false
	}
	if leavesStreams[cmd] {
		return nil, false
	}
	return nil, true
}

// xaddMayEmpty reports whether XADD's options (after its key) may trim the stream to nothing: MINID, or MAXLEN below
// 1. A trim to one or more keeps the entry added, which is after every entry the stream had.
func xaddMayEmpty(args []string) bool {
	for len(args) > 0 {
		switch strings.ToUpper(args[0]) {
		case "NOMKSTREAM":
			args = args[1:]
		case "MINID":
			return true
		case "MAXLEN":
			args = args[1:]
			if len(args) > 0 && (args[0] == "=" || args[0] == "~") {
				args = args[1:]
			}
			if len(args) == 0 {
				return true
			}
			n, err := strconv.Atoi(args[0])
			return err != nil || n < 1
		default:
			return false // the entry's id: its fields and values follow
		}
	}
	return false
}

// leavesStreams are the write commands known to leave every stream's entries as they are.
var leavesStreams = setOf(
	// one type other than a stream
	"APPEND", "DECR", "DECRBY", "GETDEL", "GETEX", "GETSET", "INCR", "INCRBY", "INCRBYFLOAT", "MSETNX", "SETNX",
	"SETRANGE", "SETBIT",
	"HDEL", "HINCRBY", "HINCRBYFLOAT", "HMSET", "HSET", "HSETNX",
	"BLMOVE", "BLPOP", "BRPOP", "BRPOPLPUSH", "LINSERT", "LMOVE", "LPOP", "LPUSH", "LPUSHX", "LREM", "LSET", "LTRIM",
	"RPOP", "RPOPLPUSH", "RPUSH", "RPUSHX",
	"SADD", "SMOVE", "SPOP", "SREM",
	"BZPOPMAX", "BZPOPMIN", "GEOADD", "ZADD", "ZINCRBY", "ZPOPMAX", "ZPOPMIN", "ZREM", "ZREMRANGEBYLEX",
	"ZREMRANGEBYRANK", "ZREMRANGEBYSCORE", "PFADD",
	"XSETID",
	// a stream's consumer groups, which a save does not keep
	"XACK", "XAUTOCLAIM", "XCLAIM", "XGROUP", "XREADGROUP",
	"PERSIST",
	// no key of their own: a script's calls and a transaction's commands come through the hook one by one
	"AUTH", "CLIENT", "CONFIG", "DISCARD", "ECHO", "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "EXEC", "HELLO",
	"MULTI", "PING", "PSUBSCRIBE", "PUBLISH", "PUNSUBSCRIBE", "QUIT", "SCRIPT", "SELECT", "SUBSCRIBE",
	"UNSUBSCRIBE", "UNWATCH", "WATCH", syncCommand,
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
