package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/orchrun/orch/jobs"
	"github.com/redis/go-redis/v9"
)

// Query says which runs Find lists. Its zero value lists every run; each field set narrows it.
type Query struct {
	// Status is a jobs.RunStatus, or "open": a run that waits for a human (parked, or with an open escalation) and is
	// not over.
	Status string
	// Plan matches runs whose plan path or plan title contains it, whatever the case.
	Plan string
	// User matches runs started by exactly this user (Origin.User).
	User string
	// Channel matches runs started in exactly this chat channel (Origin.Channel).
	Channel string
}

// StatusOpen is the Query.Status of the runs that wait for a human.
const StatusOpen = "open"

func (q Query) isZero() bool { return q == Query{} }

// needs is what a run's summary or index line must hold for q to be matched by it alone, on the index lines' scale
// (indexEntry.V): indexChannel for a channel, indexFields for a plan or a user, 0 for a status. A record written
// before the filter existed holds less, and the run's document is read instead.
func (q Query) needs() int {
	switch {
	case q.Channel != "":
		return indexChannel
	case q.Plan != "" || q.User != "":
		return indexFields
	}
	return 0
}

// runFacts is what a query is matched against: a run's summary in Redis, or its line in the archive's index.
type runFacts struct {
	status                     jobs.RunStatus
	open                       bool
	user, channel, plan, title string
	// holds is what the record holds, on Query.needs's scale.
	holds int
}

func factsOf(r *jobs.Run) runFacts {
	return runFacts{
		status:  r.Status,
		open:    !r.Status.Terminal() && (r.Status == jobs.RunParked || r.OpenEscalation() != nil),
		user:    r.Origin.User,
		channel: r.Origin.Channel,
		plan:    r.PlanPath,
		title:   r.PlanTitle,
		holds:   indexChannel,
	}
}

// matcher is a query made ready to test many runs.
type matcher struct {
	q    Query
	plan string // q.Plan in lower case
}

func newMatcher(q Query) matcher { return matcher{q: q, plan: strings.ToLower(q.Plan)} }

func (m matcher) match(f runFacts) bool {
	switch m.q.Status {
	case "":
	case StatusOpen:
		if !f.open {
			return false
		}
	default:
		if string(f.status) != m.q.Status {
			return false
		}
	}
	if m.q.User != "" && f.user != m.q.User {
		return false
	}
	if m.q.Channel != "" && f.channel != m.q.Channel {
		return false
	}
	return m.plan == "" || containsFold(f.plan, m.plan) || containsFold(f.title, m.plan)
}

// containsFold reports whether s contains the lower-case needle, whatever the case of s. It is called for every run
// a plan filter looks at, so an ASCII s is compared as it is rather than lower-cased into a copy.
func containsFold(s, needle string) bool {
	if len(needle) > len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), needle)
		}
	}
	for i := 0; i+len(needle) <= len(s); i++ {
		j := 0
		for j < len(needle) && lowerASCII(s[i+j]) == needle[j] {
			j++
		}
		if j == len(needle) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// A run's summary is what Find filters on, kept in the keySummaries hash beside its document and written in the same
// transaction as every change to the document, so that filtering the live runs reads a hundred bytes a run rather
// than decoding each run's document (kilobytes: its tasks, escalations and options). The fields are separated by NUL,
// which none of them holds (a title, which could, comes last and is taken whole); the first is the summary's version.
// Version 2 added the channel; a version 1 summary (status, open, user, plan, title) is still read, and a query on
// the channel reads such a run's document and writes its summary anew.
const summaryVersion = "2"

func summarize(r *jobs.Run) string {
	f := factsOf(r)
	open := "0"
	if f.open {
		open = "1"
	}
	return strings.Join([]string{summaryVersion, string(f.status), open, f.user, f.channel, f.plan, f.title}, "\x00")
}

func parseSummary(s string) (runFacts, bool) {
	v, rest, _ := strings.Cut(s, "\x00")
	switch v {
	case "1":
		p := strings.SplitN(rest, "\x00", 5)
		if len(p) != 5 {
			return runFacts{}, false
		}
		return runFacts{status: jobs.RunStatus(p[0]), open: p[1] == "1", user: p[2], plan: p[3], title: p[4],
			holds: indexFields}, true
	case summaryVersion:
		p := strings.SplitN(rest, "\x00", 6)
		if len(p) != 6 {
			return runFacts{}, false
		}
		return runFacts{status: jobs.RunStatus(p[0]), open: p[1] == "1", user: p[2], channel: p[3], plan: p[4],
			title: p[5], holds: indexChannel}, true
	}
	return runFacts{}, false
}

// replaceSummary writes a run's summary in place of the older one Find read (ARGV[2]) unless a change committed
// meanwhile wrote a newer one.
var replaceSummary = redis.NewScript(`if redis.call("HGET", KEYS[1], ARGV[1]) == ARGV[2] then
	return redis.call("HSET", KEYS[1], ARGV[1], ARGV[3]) end return 0`)

// found is a run Find may list, by creation time (ms).
type found struct {
	id      string
	created int64
}

// Find returns up to limit of the runs q matches after the offset newest of them, newest first, and whether more
// match; the runs in Redis and the archived ones alike.
//
// It decides on each run without reading its document: a live run by its summary in Redis (see summarize), an archived
// run by its line in the archive's index (see Archive.find). Only the page's runs are read whole. The live runs are
// read newest first in growing batches until the page is full, because with a Redis server (no archive) every run
// is live, however many there are; with an archive all of them are read, which is cheap because the live runs are
// then those not over and those that ended seconds ago, and whether a run is live decides which of its copies counts.
//
// As with Page, a run matched but unreadable when the page is read is left out with a warning that names it (the page
// is one short: the offsets of the next pages stay those of the matches), and a live run is matched by its document
// when it has no summary (one written by an orch from before summaries), which is then written for the next time.
func (s *Store) Find(ctx context.Context, q Query, offset, limit int) (runs []*jobs.Run, more bool, err error) {
	if limit <= 0 {
		limit = 20
	}
	offset = max(offset, 0)
	if q == (Query{Status: StatusOpen}) {
		return s.findOpen(ctx, offset, limit) // the runs that wait are indexed: no summary is read
	}
	n := offset + limit + 1 // a match past the page says there are more
	m := newMatcher(q)
	all, live, err := s.findLive(ctx, m, n, s.archive != nil)
	if err != nil {
		return nil, false, err
	}
	if s.archive != nil {
		archived, err := s.archive.find(m, n, func(id string) bool { return live[id] }, s.log)
		if err != nil {
			return nil, false, err
		}
		for _, e := range archived {
			all = append(all, found{e.ID, e.Created})
		}
	}
	slices.SortFunc(all, func(a, b found) int {
		return cmp.Or(cmp.Compare(b.created, a.created), strings.Compare(b.id, a.id))
	})
	if offset >= len(all) {
		return nil, false, nil
	}
	more = len(all) > offset+limit
	runs, err = s.load(ctx, all[offset:min(len(all), offset+limit)])
	return runs, more, err
}

// findLive returns the live runs m matches, newest first: at least n of them when there are, or all of them with
// every; and the ids of the live runs it read.
func (s *Store) findLive(ctx context.Context, m matcher, n int, every bool) ([]found, map[string]bool, error) {
	var out []found
	live := map[string]bool{}
	batch := int64(256)
	for start := int64(0); ; start += batch {
		if start > 0 {
			batch = min(batch*2, 4096)
		}
		zs, err := s.rdb.ZRevRangeWithScores(ctx, keyRuns, start, start+batch-1).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("listing runs: %w", err)
		}
		ids := make([]string, len(zs))
		for i, z := range zs {
			ids[i], _ = z.Member.(string)
			live[ids[i]] = true
		}
		keep, err := s.matchLive(ctx, m, ids)
		if err != nil {
			return nil, nil, err
		}
		for i, z := range zs {
			if keep[i] {
				out = append(out, found{ids[i], int64(z.Score)})
			}
		}
		if int64(len(zs)) < batch || !every && len(out) >= n {
			return out, live, nil
		}
	}
}

// matchLive reports which of the live runs ids m matches, by their summaries.
func (s *Store) matchLive(ctx context.Context, m matcher, ids []string) ([]bool, error) {
	keep := make([]bool, len(ids))
	if m.q.isZero() || len(ids) == 0 {
		for i := range keep {
			keep[i] = true
		}
		return keep, nil
	}
	sums, err := s.rdb.HMGet(ctx, keySummaries, ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("reading run summaries: %w", err)
	}
	var missing []int
	old := map[int]string{} // summaries that hold too little for m, by index in ids
	for i, v := range sums {
		str, _ := v.(string)
		f, ok := parseSummary(str)
		if !ok || f.holds < m.q.needs() {
			missing = append(missing, i)
			if ok {
				old[i] = str
			}
			continue
		}
		keep[i] = m.match(f)
	}
	if len(missing) == 0 {
		return keep, nil
	}
	// Runs without a summary, or with one that holds too little for m, are matched by their documents, and given
	// their summary. HSETNX, or a replace of the very summary read: a change committed meanwhile wrote the newer
	// summary, which this older one must not replace.
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range missing {
			p.Get(ctx, runKey(ids[i]))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, i := range missing {
			data, err := cmds[j].(*redis.StringCmd).Bytes()
			if err != nil {
				continue // gone meanwhile
			}
			r, err := decodeRun(ids[i], data)
			if err != nil {
				s.log.Warn("skipping a damaged run", "run", ids[i], "err", err)
				continue
			}
			keep[i] = m.match(factsOf(r))
			if was, ok := old[i]; ok {
				replaceSummary.Eval(ctx, p, []string{keySummaries}, ids[i], was, summarize(r))
			} else {
				p.HSetNX(ctx, keySummaries, ids[i], summarize(r))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("writing run summaries: %w", err)
	}
	return keep, nil
}

// load reads the runs of a page: the live ones in one round trip, the others from the archive.
func (s *Store) load(ctx context.Context, page []found) ([]*jobs.Run, error) {
	keys := make([]string, len(page))
	for i, f := range page {
		keys[i] = runKey(f.id)
	}
	docs, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	runs := make([]*jobs.Run, 0, len(page))
	for i, f := range page {
		var r *jobs.Run
		if doc, ok := docs[i].(string); ok {
			r, err = decodeRun(f.id, []byte(doc))
		} else if s.archive != nil {
			r, err = s.archive.get(f.id)
			if errors.Is(err, jobs.ErrRunNotFound) {
				r, err = s.getLive(ctx, f.id) // brought back from the archive meanwhile
			}
		} else {
			err = fmt.Errorf("%w: %s", jobs.ErrRunNotFound, f.id)
		}
		switch {
		case errors.Is(err, jobs.ErrRunNotFound):
			continue // pruned meanwhile
		case errors.Is(err, ErrDamaged):
			s.log.Warn("skipping a damaged run", "run", f.id, "err", err)
			continue
		case err != nil:
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// find returns the n newest archived runs by creation that m matches, newest first, skipping the ids in skip (runs
// that are live again). A line from before the index held plan, title and user (V 0), or the channel (V below
// indexChannel), is matched by the run's file when m filters on what it lacks: that reads the file, so such lines
// cost a file each, once per Find; lines archived since are matched by the line alone. A file that cannot be read is no match, with a warning on log.
//
// It reads the index as the process last read it and what was appended since (see indexCache).
func (a *Archive) find(m matcher, n int, skip func(string) bool, log *slog.Logger) ([]indexEntry, error) {
	if err := a.ensureIndex(); err != nil {
		return nil, err
	}
	snap, err := a.index.load(a.indexPath())
	if err != nil {
		return nil, err
	}
	return a.top(m, n, skip, log, func(bound func() int64, keep func(indexEntry) bool) error {
		snap.newest(bound, keep)
		return nil
	})
}

// top returns the n newest runs by creation that m matches among those scan gives, newest first; scan is
// Archive.newest or its like.
func (a *Archive) top(m matcher, n int, skip func(string) bool, log *slog.Logger,
	scan func(bound func() int64, keep func(indexEntry) bool) error) ([]indexEntry, error) {
	var top []indexEntry // sorted newest first, at most n
	bound := func() int64 {
		if len(top) < n {
			return -1
		}
		return top[len(top)-1].Created
	}
	var ferr error
	err := scan(bound, func(e indexEntry) bool {
		if skip(e.ID) || len(top) == n && cmpCreated(e, top[n-1]) < 0 {
			return true // live again, or too old for the page: no need to match it
		}
		f := runFacts{status: jobs.RunStatus(e.Status), user: e.User, channel: e.Channel, plan: e.Plan, title: e.Title,
			holds: e.V}
		// Archived runs are over: none waits for a human.
		if e.V < m.q.needs() {
			r, err := a.get(e.ID)
			switch {
			case errors.Is(err, jobs.ErrRunNotFound):
				return true // pruned meanwhile
			case errors.Is(err, ErrDamaged):
				log.Warn("skipping a damaged run", "run", e.ID, "err", err)
				return true
			case err != nil:
				ferr = err
				return false
			}
			f = factsOf(r)
		}
		if !m.match(f) {
			return true
		}
		i, _ := slices.BinarySearchFunc(top, e, func(x, y indexEntry) int { return -cmpCreated(x, y) })
		top = slices.Insert(top, i, e)
		if len(top) > n {
			top = top[:n]
		}
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	return top, err
}
