// Package store keeps runs in Redis: each run one document changed only by atomic updates, with its append-only
// event log and audit trail, what the front ends that mirror runs elsewhere (Slack) keep of them, and the connection
// (a Redis URL or the embedded store) that orch opens to reach them.
package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/redis/go-redis/v9"
)

// ErrConflict is returned when a run kept changing under an update; the caller may try again.
var ErrConflict = errors.New("run changed concurrently; try again")

const (
	keyRuns = "orch:runs" // zset: run id by creation time (ms)
	// keySummaries is a hash: run id → what Find filters on (see summarize), written with the run's document.
	keySummaries  = "orch:runs:summary"
	updateRetries = 50
	eventField    = "e"
	// maxEvents bounds each run's event stream; older entries are trimmed approximately.
	maxEvents = 10000
)

func runKey(id string) string    { return "orch:run:{" + id + "}" }
func eventsKey(id string) string { return "orch:run:{" + id + "}:events" }
func auditKey(id string) string  { return "orch:run:{" + id + "}:audit" }

// Store keeps runs, their event logs and audit trails in Redis; with an archive, the runs that are over are kept there
// instead, and read from there when asked for.
type Store struct {
	rdb       redis.UniversalClient
	now       func() time.Time
	observers []func([]jobs.Event)
	archive   *Archive
	log       *slog.Logger
	// durable, when set, returns once what was written is on disk (the embedded store): every change to a run is,
	// before the caller acts on it, so that a store taken over from disk after its holder died has each run as
	// its workers last saw it.
	durable func(context.Context) error
	// pollEvents, when set, is how often a reader waiting for a run's events looks for them (pollFor): the
	// embedded store's.
	pollEvents time.Duration
	// repl, when set, has every change wait until a replica of Redis has it (replicate.go).
	repl *replication
	// budgets are the teams' budgets whose ledgers updates keep (ledger.go); onSpend hears what teams spent.
	budgets map[string]jobs.TeamBudget
	onSpend func(team string, usd float64)
}

// UseArchive has the store read finished runs from a, and ArchiveFinished move them there. log hears of runs skipped
// because they are damaged; it may be nil.
func (s *Store) UseArchive(a *Archive, log *slog.Logger) {
	s.archive = a
	if log != nil {
		s.log = log
	}
}

// Archive is the store's archive, nil when every run stays in Redis.
func (s *Store) Archive() *Archive { return s.archive }

// Observe has fn called with the events of every change once it is committed (metrics and logs derive from them: a
// change retried under contention is seen once). Observers are added before the store is used.
func (s *Store) Observe(fn func([]jobs.Event)) { s.observers = append(s.observers, fn) }

// New returns a store on rdb. now may be nil (time.Now).
func New(rdb redis.UniversalClient, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, now: now, log: slog.New(slog.DiscardHandler)}
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Create saves a new run. It fails if a run with the same id exists.
func (s *Store) Create(ctx context.Context, r *jobs.Run, events ...jobs.Event) error {
	now := s.now().UTC()
	r.CreatedAt, r.UpdatedAt, r.Version = now, now, 1
	c := jobs.NewChange(r)
	for _, e := range events {
		c.Emit(e)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding run: %w", err)
	}
	// Written at once (MULTI) under a watch of the run's key, so that waiting for a replica waits for these writes, and
	// a connection lost as they were sent leaves all of them or none: which one, a read of the run tells.
	key, sent, spent := runKey(r.ID), false, r.Spent()
	create := func(tx *redis.Tx) error {
		n, err := tx.Exists(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("saving run %s: %w", r.ID, err)
		}
		if n > 0 {
			return fmt.Errorf("saving run %s: a run with this id exists", r.ID)
		}
		sent = true
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, data, 0)
			p.ZAdd(ctx, keyRuns, redis.Z{Score: float64(now.UnixMilli()), Member: r.ID})
			p.HSet(ctx, keySummaries, r.ID, summarize(r))
			indexOpen(ctx, p, r)
			if spent > 0 && r.Team() != "" {
				writeSpend(ctx, p, r.Team(), spent, 0, now) // what reading its plan cost, before any attempt
			}
			return s.appendEvents(ctx, p, r.ID, c.Events)
		})
		if err != nil {
			return fmt.Errorf("saving run %s: %w", r.ID, err)
		}
		return s.replicate(ctx, tx, r.ID)
	}
	for lost := 0; ; lost++ {
		sent = false
		err = s.rdb.Watch(ctx, create, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // the key changed under the watch: the next look finds the run that took the id
		}
		if err == nil || !lostConnection(err) || lost == lostRetries {
			break
		}
		if sent {
			if err = s.landed(ctx, key, data); err == nil || !errors.Is(err, errNotLanded) {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	s.spent(r.Team(), spent)
	s.makeDurable(ctx, r.ID)
	return nil
}

// makeDurable waits for a committed change to be on disk. A failure is not the change's: the change is made, and the
// store's own saver keeps trying and says why it cannot; what a command reports it saves again first (Backend.Sync).
func (s *Store) makeDurable(ctx context.Context, runID string) {
	if s.durable == nil {
		return
	}
	// The change is made whatever becomes of the caller: its being on disk does not depend on the caller waiting.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.durable(ctx); err != nil {
		s.log.Warn("a change to a run is not on disk yet", "run_id", runID, "err", err)
	}
}

// Get loads a run, from the archive when it is over and archived.
func (s *Store) Get(ctx context.Context, id string) (*jobs.Run, error) {
	r, err := s.getLive(ctx, id)
	if errors.Is(err, jobs.ErrRunNotFound) && s.archive != nil {
		return s.archive.get(id)
	}
	return r, err
}

func (s *Store) getLive(ctx context.Context, id string) (*jobs.Run, error) {
	data, err := s.rdb.Get(ctx, runKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s", jobs.ErrRunNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("loading run %s: %w", id, err)
	}
	return decodeRun(id, data)
}

// decodeRun reads a run's stored value: its JSON document, or its compact form (compact.go).
func decodeRun(id string, data []byte) (*jobs.Run, error) {
	if compact(data) {
		ar, err := decodeCompact(id, data, false)
		if err != nil {
			return nil, err
		}
		data = ar.Run
	}
	return decodeDoc(id, data)
}

func decodeDoc(id string, data []byte) (*jobs.Run, error) {
	var r jobs.Run
	if err := jobs.DecodeRun(data, &r); err != nil {
		return nil, fmt.Errorf("run %s: its document (Redis key %s) is %w (%v); delete the key to skip it", id, runKey(id), ErrDamaged, err)
	}
	return &r, nil
}

// Update applies fn to the run atomically: fn sees the latest saved run, and its changes, events and audit entries are
// written together only if nobody changed the run meanwhile (otherwise fn runs again on the newer run). An error from
// fn aborts the update and is returned as is. An archived run that fn changes is brought back to the live store first.
func (s *Store) Update(ctx context.Context, id string, fn func(r *jobs.Run, c *jobs.Change) error) (*jobs.Run, error) {
	return s.change(ctx, id, fn, true)
}

// change is Update; books says whether the update may change what the run spends or holds (every change of the
// worker's may), and so must read and watch its team's ledgers. An append of events does not: it leaves them alone,
// and does not collide with the starts and settlements of the team's other runs.
func (s *Store) change(ctx context.Context, id string, fn func(r *jobs.Run, c *jobs.Change) error, books bool) (*jobs.Run, error) {
	out, err := s.update(ctx, id, fn, books)
	if errors.Is(err, jobs.ErrRunNotFound) && s.archive != nil {
		if err := s.restore(ctx, id, fn); err != nil {
			return nil, err
		}
		return s.update(ctx, id, fn, books)
	}
	return out, err
}

func (s *Store) update(ctx context.Context, id string, fn func(r *jobs.Run, c *jobs.Change) error, books bool) (*jobs.Run, error) {
	key := runKey(id)
	var out *jobs.Run
	// What a try sent to be written: when the connection is lost as it is sent, a read of the run tells whether it was.
	var sent struct {
		run    *jobs.Run
		data   []byte
		events []jobs.Event
		spent  float64
	}
	txf := func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w: %s", jobs.ErrRunNotFound, id)
		}
		if err != nil {
			return err
		}
		rp, kept, err := decodeStored(id, data)
		if err != nil {
			return err
		}
		r := *rp
		was := r.Status
		c := jobs.NewChange(&r)
		states := jobs.StatesOf(&r)
		now := s.now()
		before := jobs.AccountOf(&r)
		var read map[string]*jobs.Ledger
		orig := map[string]jobs.Ledger{}
		if books {
			if read, c.Ledger, err = s.ledgers(ctx, tx, &r, before, now); err != nil {
				return err
			}
			for k, l := range read {
				orig[k] = *l
			}
			c.Before = before
		}
		if err := fn(&r, c); err != nil {
			return err
		}
		if err := refused(states, &r, c); err != nil {
			return err
		}
		r.Version++
		r.UpdatedAt = s.now().UTC()
		data, err = json.Marshal(&r)
		if err != nil {
			return fmt.Errorf("encoding run %s: %w", id, err)
		}
		sent.run, sent.data, sent.events = &r, data, c.Events
		var spent float64
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, data, 0)
			spent = s.account(ctx, p, &r, before, read, orig, c.Ledger, now)
			sent.spent = spent
			p.HSet(ctx, keySummaries, id, summarize(&r))
			indexOpen(ctx, p, &r)
			indexResting(ctx, p, &r, was, now)
			if kept != nil {
				writeBack(ctx, p, id, kept) // a compact run's log, back in streams before this change's entries
			}
			if err := s.appendEvents(ctx, p, id, c.Events); err != nil {
				return err
			}
			return s.appendAudit(ctx, p, id, c.Audit)
		})
		if err == nil {
			err = s.replicate(ctx, tx, id)
		}
		if err == nil {
			out = &r
			s.observe(c.Events)
			s.spent(r.Team(), spent)
		}
		return err
	}
	for i, lost := 0, 0; i < updateRetries; i++ {
		sent.data = nil
		err := s.rdb.Watch(ctx, txf, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil && lostConnection(err) && lost < lostRetries {
			lost++
			if sent.data == nil {
				continue // lost before anything was sent: nothing was written
			}
			if err = s.landed(ctx, key, sent.data); errors.Is(err, errNotLanded) {
				continue
			}
			if err == nil {
				out = sent.run
				s.observe(sent.events)
				s.spent(sent.run.Team(), sent.spent)
			}
		}
		if err == nil {
			s.makeDurable(ctx, id)
		}
		return out, err
	}
	return nil, fmt.Errorf("updating run %s: %w", id, ErrConflict)
}

// spent tells whoever listens what a committed update added to a team's spend.
func (s *Store) spent(team string, usd float64) {
	if s.onSpend != nil && team != "" && usd > 0 {
		s.onSpend(team, usd)
	}
}

// observe hands committed events to the store's observers.
func (s *Store) observe(events []jobs.Event) {
	if len(events) == 0 {
		return
	}
	for _, fn := range s.observers {
		fn(events)
	}
}

// refused is the error of a change fn made to r that moves a status where it may not go (an *IllegalMove): one of
// the domain's moves that refused itself, or a status that went elsewhere since states were taken.
func refused(states jobs.States, r *jobs.Run, c *jobs.Change) error {
	if err := c.Err(); err != nil {
		return err
	}
	return states.Check(r)
}

// List returns up to limit runs, newest first.
func (s *Store) List(ctx context.Context, limit int) ([]*jobs.Run, error) {
	return s.Page(ctx, 0, limit)
}

// Page returns up to limit runs after the offset newest, newest first: those in Redis and those archived. A run that
// cannot be read is skipped, with a warning that names it, so that one damaged run does not hide the others.
func (s *Store) Page(ctx context.Context, offset, limit int) ([]*jobs.Run, error) {
	if limit <= 0 {
		limit = 20
	}
	offset = max(offset, 0)
	type candidate struct {
		id      string
		created int64
	}
	live, err := s.rdb.ZRevRangeWithScores(ctx, keyRuns, 0, int64(offset+limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var all []candidate
	isLive := make(map[string]bool, len(live))
	for _, z := range live {
		id, _ := z.Member.(string)
		isLive[id] = true
		all = append(all, candidate{id, int64(z.Score)})
	}
	if s.archive != nil {
		archived, err := s.archive.page(offset+limit, func(id string) bool { return isLive[id] })
		if err != nil {
			return nil, err
		}
		for _, e := range archived {
			all = append(all, candidate{e.ID, e.Created})
		}
		slices.SortStableFunc(all, func(a, b candidate) int { return cmp.Compare(b.created, a.created) })
	}
	if offset >= len(all) {
		return nil, nil
	}
	all = all[offset:min(len(all), offset+limit)]
	runs := make([]*jobs.Run, 0, len(all))
	for _, c := range all {
		r, err := s.Get(ctx, c.id)
		switch {
		case errors.Is(err, jobs.ErrRunNotFound):
			continue // pruned or archived meanwhile
		case errors.Is(err, ErrDamaged):
			s.log.Warn("skipping a damaged run", "run", c.id, "err", err)
			continue
		case err != nil:
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Live returns up to limit of the runs in Redis, newest first: with an archive, the runs that are not over (and those
// that ended moments ago), without reading any archived one.
func (s *Store) Live(ctx context.Context, limit int) ([]*jobs.Run, error) {
	ids, err := s.rdb.ZRevRange(ctx, keyRuns, 0, int64(limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	runs := make([]*jobs.Run, 0, len(ids))
	for _, id := range ids {
		r, err := s.getLive(ctx, id)
		if errors.Is(err, jobs.ErrRunNotFound) || errors.Is(err, ErrDamaged) {
			continue
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Latest is the newest run matching keep (nil: any), among the 200 newest, or ErrRunNotFound.
func (s *Store) Latest(ctx context.Context, keep func(*jobs.Run) bool) (*jobs.Run, error) {
	const page, most = 20, 200
	for offset := 0; offset < most; offset += page {
		runs, err := s.Page(ctx, offset, page)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if keep == nil || keep(r) {
				return r, nil
			}
		}
		if len(runs) < page {
			break
		}
	}
	return nil, jobs.ErrRunNotFound
}

// LatestLive is the newest run in Redis matching keep, or ErrRunNotFound: what looks for a run that is not over (one
// waiting for an answer) has no archived run to read.
func (s *Store) LatestLive(ctx context.Context, keep func(*jobs.Run) bool) (*jobs.Run, error) {
	runs, err := s.Live(ctx, 200)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if keep == nil || keep(r) {
			return r, nil
		}
	}
	return nil, jobs.ErrRunNotFound
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.rdb.Ping(ctx).Err()
}
