package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Embedded is the in-process Redis that `orch` uses when no Redis server is configured. It persists to a snapshot
// file in the state directory, so a later orch process sees the same runs. While one process owns the state
// directory, other orch processes connect to its live server instead of loading the snapshot, so a run waiting in one
// terminal can be answered from another.
type Embedded struct {
	dir    string
	addr   string
	mr     *miniredis.Miniredis // nil when another process owns the directory
	lock   *os.File
	log    *slog.Logger
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex // serialises snapshots
	lastCC int
}

const (
	snapshotFile = "redis.json"
	addrFile     = "redis.addr"
	lockFile     = "lock"
	// snapshotEvery is how often a changed embedded store is written out; a crash loses at most this much.
	snapshotEvery = 500 * time.Millisecond
	snapshotVer   = 1
)

// OpenEmbedded opens the embedded store in dir, creating it if needed.
func OpenEmbedded(dir string, log *slog.Logger) (*Embedded, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening state dir lock: %w", err)
	}
	locked, err := tryLock(lf)
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("locking state dir: %w", err)
	}
	if !locked {
		lf.Close()
		return joinLive(dir, log)
	}
	e := &Embedded{dir: dir, lock: lf, log: log, stop: make(chan struct{})}
	e.mr = miniredis.NewMiniRedis()
	e.mr.ClockTTL(true) // TTLs follow the wall clock, as on a real server
	if err := e.load(); err != nil {
		unlock(lf)
		lf.Close()
		return nil, err
	}
	if err := e.mr.StartAddr("127.0.0.1:0"); err != nil {
		unlock(lf)
		lf.Close()
		return nil, fmt.Errorf("starting embedded redis: %w", err)
	}
	e.addr = e.mr.Addr()
	if err := writeFileAtomic(filepath.Join(dir, addrFile), []byte(e.addr+"\n"+strconv.Itoa(os.Getpid())+"\n")); err != nil {
		e.mr.Close()
		unlock(lf)
		lf.Close()
		return nil, err
	}
	e.lastCC = e.mr.CommandCount()
	e.wg.Add(1)
	go e.saver()
	return e, nil
}

// joinLive connects to the embedded server of the process that owns dir.
func joinLive(dir string, log *slog.Logger) (*Embedded, error) {
	data, err := os.ReadFile(filepath.Join(dir, addrFile))
	if err != nil {
		return nil, fmt.Errorf("state dir %s is in use by another orch process, and its address is unreadable: %w", dir, err)
	}
	addr, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("state dir %s is in use by another orch process that does not answer at %s: %w", dir, addr, err)
	}
	conn.Close()
	return &Embedded{dir: dir, addr: addr, log: log}, nil
}

// Addr is the address Redis clients connect to.
func (e *Embedded) Addr() string { return e.addr }

// Owner reports whether this process serves the store (and so must keep running for others to reach it).
func (e *Embedded) Owner() bool { return e.mr != nil }

// Close saves a final snapshot and stops the server.
func (e *Embedded) Close() error {
	if e.mr == nil {
		return nil
	}
	close(e.stop)
	e.wg.Wait()
	err := e.Save()
	e.mr.Close()
	os.Remove(filepath.Join(e.dir, addrFile))
	unlock(e.lock)
	e.lock.Close()
	return err
}

func (e *Embedded) saver() {
	defer e.wg.Done()
	t := time.NewTicker(snapshotEvery)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			if cc := e.mr.CommandCount(); cc != e.lastCC {
				e.lastCC = cc
				if err := e.Save(); err != nil {
					e.log.Warn("saving embedded store", "err", err)
				}
			}
		}
	}
}

type snapshot struct {
	Version int           `json:"version"`
	SavedAt time.Time     `json:"saved_at"`
	Keys    []snapshotKey `json:"keys"`
}

type snapshotKey struct {
	Key    string             `json:"key"`
	Type   string             `json:"type"`
	TTLms  int64              `json:"ttl_ms,omitempty"`
	String *string            `json:"string,omitempty"`
	Hash   map[string]string  `json:"hash,omitempty"`
	List   []string           `json:"list,omitempty"`
	Set    []string           `json:"set,omitempty"`
	ZSet   map[string]float64 `json:"zset,omitempty"`
	Stream []streamEntry      `json:"stream,omitempty"`
}

type streamEntry struct {
	ID     string   `json:"id"`
	Values []string `json:"values"`
}

// Save writes the store to the snapshot file atomically.
func (e *Embedded) Save() error {
	if e.mr == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	snap := snapshot{Version: snapshotVer, SavedAt: time.Now().UTC()}
	keys := e.mr.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		sk := snapshotKey{Key: k, Type: e.mr.Type(k)}
		if ttl := e.mr.TTL(k); ttl > 0 {
			sk.TTLms = ttl.Milliseconds()
		}
		var err error
		switch sk.Type {
		case "string":
			var v string
			v, err = e.mr.Get(k)
			sk.String = &v
		case "hash":
			var fields []string
			fields, err = e.mr.HKeys(k)
			sk.Hash = make(map[string]string, len(fields))
			for _, f := range fields {
				sk.Hash[f] = e.mr.HGet(k, f)
			}
		case "list":
			sk.List, err = e.mr.List(k)
		case "set":
			sk.Set, err = e.mr.Members(k)
		case "zset":
			sk.ZSet, err = e.mr.SortedSet(k)
		case "stream":
			var entries []miniredis.StreamEntry
			entries, err = e.mr.Stream(k)
			for _, se := range entries {
				sk.Stream = append(sk.Stream, streamEntry{ID: se.ID, Values: se.Values})
			}
		case "none":
			continue // expired or deleted since Keys()
		default:
			e.log.Warn("embedded store: key type not persisted", "key", k, "type", sk.Type)
			continue
		}
		if err != nil {
			continue // changed type or vanished between calls; the next snapshot catches it
		}
		snap.Keys = append(snap.Keys, sk)
	}
	data, err := json.Marshal(&snap)
	if err != nil {
		return fmt.Errorf("encoding snapshot: %w", err)
	}
	return writeFileAtomic(filepath.Join(e.dir, snapshotFile), data)
}

func (e *Embedded) load() error {
	path := filepath.Join(e.dir, snapshotFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("state file %s is damaged (%v); move it away to start afresh", path, err)
	}
	if snap.Version != snapshotVer {
		return fmt.Errorf("state file %s has version %d; this orch reads version %d", path, snap.Version, snapshotVer)
	}
	for _, k := range snap.Keys {
		var err error
		switch k.Type {
		case "string":
			if k.String != nil {
				err = e.mr.Set(k.Key, *k.String)
			}
		case "hash":
			fv := make([]string, 0, 2*len(k.Hash))
			for f, v := range k.Hash {
				fv = append(fv, f, v)
			}
			if len(fv) > 0 {
				e.mr.HSet(k.Key, fv...)
			}
		case "list":
			if len(k.List) > 0 {
				_, err = e.mr.RPush(k.Key, k.List...)
			}
		case "set":
			if len(k.Set) > 0 {
				_, err = e.mr.SAdd(k.Key, k.Set...)
			}
		case "zset":
			for m, s := range k.ZSet {
				if _, err = e.mr.ZAdd(k.Key, s, m); err != nil {
					break
				}
			}
		case "stream":
			for _, se := range k.Stream {
				if _, err = e.mr.XAdd(k.Key, se.ID, se.Values); err != nil {
					break
				}
			}
		}
		if err != nil {
			return fmt.Errorf("restoring %s from %s: %w", k.Key, path, err)
		}
		if k.TTLms > 0 {
			// Time passed while nobody ran: count it against the TTL, as a server would have.
			left := time.Duration(k.TTLms)*time.Millisecond - time.Since(snap.SavedAt)
			if left <= 0 {
				e.mr.Del(k.Key)
				continue
			}
			e.mr.SetTTL(k.Key, left)
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
