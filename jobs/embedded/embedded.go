// Package embedded is the in-process Redis (miniredis) that orch runs when no Redis server is configured,
// persisted to a snapshot in the state directory and shared with other orch processes while one holds it.
package embedded

import (
	"encoding/base64"
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
	"unicode/utf8"

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
	snapshotVer   = 2
)

// Open opens the embedded store in dir, creating it if needed.
func Open(dir string, log *slog.Logger) (*Embedded, error) {
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
	// Stop serving first: a write acknowledged to another process after the last snapshot would be lost.
	e.mr.Close()
	err := e.save()
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
				if err := e.save(); err != nil {
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
	Key    blob          `json:"key"`
	Type   string        `json:"type"`
	TTLms  int64         `json:"ttl_ms,omitempty"`
	String *blob         `json:"string,omitempty"`
	Hash   [][2]blob     `json:"hash,omitempty"`
	List   []blob        `json:"list,omitempty"`
	Set    []blob        `json:"set,omitempty"`
	ZSet   []zmember     `json:"zset,omitempty"`
	Stream []streamEntry `json:"stream,omitempty"`
}

type zmember struct {
	Member blob    `json:"m"`
	Score  float64 `json:"s"`
}

type streamEntry struct {
	ID     string `json:"id"`
	Values []blob `json:"values"`
}

// blob is a Redis string in the snapshot. Redis strings are bytes (asynq stores protobuf): text that is valid UTF-8
// stays readable JSON, anything else is kept exactly, as base64.
type blob string

func (b blob) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(b)) {
		return json.Marshal(string(b))
	}
	return json.Marshal(map[string]string{"b64": base64.StdEncoding.EncodeToString([]byte(b))})
}

func (b *blob) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*b = blob(s)
		return nil
	}
	var m struct {
		B64 string `json:"b64"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(m.B64)
	if err != nil {
		return err
	}
	*b = blob(raw)
	return nil
}

func blobs(ss []string) []blob {
	out := make([]blob, len(ss))
	for i, s := range ss {
		out[i] = blob(s)
	}
	return out
}

func strs(bs []blob) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// save writes the store to the snapshot file atomically.
func (e *Embedded) save() error {
	if e.mr == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	snap := snapshot{Version: snapshotVer, SavedAt: time.Now().UTC()}
	keys := e.mr.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		sk := snapshotKey{Key: blob(k), Type: e.mr.Type(k)}
		if ttl := e.mr.TTL(k); ttl > 0 {
			sk.TTLms = ttl.Milliseconds()
		}
		var err error
		switch sk.Type {
		case "string":
			var v string
			v, err = e.mr.Get(k)
			b := blob(v)
			sk.String = &b
		case "hash":
			var fields []string
			fields, err = e.mr.HKeys(k)
			for _, f := range fields {
				sk.Hash = append(sk.Hash, [2]blob{blob(f), blob(e.mr.HGet(k, f))})
			}
		case "list":
			var l []string
			l, err = e.mr.List(k)
			sk.List = blobs(l)
		case "set":
			var l []string
			l, err = e.mr.Members(k)
			sk.Set = blobs(l)
		case "zset":
			var z map[string]float64
			z, err = e.mr.SortedSet(k)
			for m, sc := range z {
				sk.ZSet = append(sk.ZSet, zmember{blob(m), sc})
			}
		case "stream":
			var entries []miniredis.StreamEntry
			entries, err = e.mr.Stream(k)
			for _, se := range entries {
				sk.Stream = append(sk.Stream, streamEntry{ID: se.ID, Values: blobs(se.Values)})
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
		key := string(k.Key)
		var err error
		switch k.Type {
		case "string":
			if k.String != nil {
				err = e.mr.Set(key, string(*k.String))
			}
		case "hash":
			fv := make([]string, 0, 2*len(k.Hash))
			for _, p := range k.Hash {
				fv = append(fv, string(p[0]), string(p[1]))
			}
			if len(fv) > 0 {
				e.mr.HSet(key, fv...)
			}
		case "list":
			if len(k.List) > 0 {
				_, err = e.mr.RPush(key, strs(k.List)...)
			}
		case "set":
			if len(k.Set) > 0 {
				_, err = e.mr.SAdd(key, strs(k.Set)...)
			}
		case "zset":
			for _, z := range k.ZSet {
				if _, err = e.mr.ZAdd(key, z.Score, string(z.Member)); err != nil {
					break
				}
			}
		case "stream":
			for _, se := range k.Stream {
				if _, err = e.mr.XAdd(key, se.ID, strs(se.Values)); err != nil {
					break
				}
			}
		}
		if err != nil {
			return fmt.Errorf("restoring %s from %s: %w", key, path, err)
		}
		if k.TTLms > 0 {
			// Time passed while nobody ran: count it against the TTL, as a server would have.
			left := time.Duration(k.TTLms)*time.Millisecond - time.Since(snap.SavedAt)
			if left <= 0 {
				e.mr.Del(key)
				continue
			}
			e.mr.SetTTL(key, left)
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
