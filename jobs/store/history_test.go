package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// clock is a settable clock for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// archived returns a store on each backend with an archive in a new directory, and its clock.
func archivedStores(t *testing.T) map[string]func(t *testing.T) (*Store, *clock) {
	out := map[string]func(t *testing.T) (*Store, *clock){}
	for name, rdb := range backends(t) {
		out[name] = func(t *testing.T) (*Store, *clock) {
			if err := rdb.FlushDB(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			c := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			s := New(rdb, c.now)
			s.UseArchive(NewArchive(t.TempDir(), nil), nil)
			return s, c
		}
	}
	return out
}

// finish creates a run with an event and an audit entry and ends it with status.
func finish(t *testing.T, s *Store, status jobs.RunStatus) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := newRun()
	if err := s.Create(ctx, r, jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{})); err != nil {
		t.Fatal(err)
	}
	r, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		c.Audit = append(c.Audit, jobs.AuditEntry{Action: "resolved", By: "ana", Detail: "A"})
		if status.Terminal() {
			r.Status, r.EndedAt = status, s.Now().UTC()
			c.Emit(jobs.NewEvent(r.ID, "", jobs.RunCompletedEvent{}))
		} else {
			r.Status = status
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ids(runs []*jobs.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func TestArchiveMovesFinishedRunsOutOfRedis(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			done := finish(t, s, jobs.RunCompleted)
			c.add(time.Minute)
			parked := finish(t, s, jobs.RunParked)
			c.add(time.Minute)
			failed := finish(t, s, jobs.RunFailed)
			wantEvents, _ := s.Events(ctx, done.ID, "0", 0)
			wantAudit, _ := s.Audit(ctx, done.ID)

			if n, err := s.ArchiveFinished(ctx, 2*time.Minute); err != nil || n != 1 {
				t.Fatalf("archive of runs ended 2 minutes ago: moved %d, %v; want the completed one", n, err)
			}
			if n, err := s.ArchiveFinished(ctx, 0); err != nil || n != 1 {
				t.Fatalf("archive: moved %d, %v; want the failed one", n, err)
			}
			live, err := s.Live(ctx, 100)
			if err != nil || !slices.Equal(ids(live), []string{parked.ID}) {
				t.Fatalf("live runs = %v, %v; want only the parked one", ids(live), err)
			}
			if keys, _ := s.rdb.Keys(ctx, "orch:run:{"+done.ID+"}*").Result(); len(keys) > 0 {
				t.Fatalf("the archived run left keys in Redis: %v", keys)
			}

			got, err := s.Get(ctx, done.ID)
			if err != nil || got.Status != jobs.RunCompleted || got.Version != done.Version {
				t.Fatalf("archived run = %+v, %v", got, err)
			}
			events, err := s.Events(ctx, done.ID, "0", 0)
			if err != nil || len(events) != len(wantEvents) || events[len(events)-1].ID != wantEvents[len(wantEvents)-1].ID {
				t.Fatalf("archived events = %v, %v; want %v", events, err, wantEvents)
			}
			if after, _ := s.Events(ctx, done.ID, wantEvents[0].ID, time.Second); len(after) != len(wantEvents)-1 {
				t.Fatalf("events after the first = %d, want %d", len(after), len(wantEvents)-1)
			}
			if last, _ := s.LastEventID(ctx, done.ID); last != wantEvents[len(wantEvents)-1].ID {
				t.Fatalf("last event id = %s", last)
			}
			if recent, _ := s.Recent(ctx, done.ID, 1); len(recent) != 1 || recent[0].Type() != "run_completed" {
				t.Fatalf("recent = %v", recent)
			}
			if audit, _ := s.Audit(ctx, done.ID); len(audit) != len(wantAudit) || audit[0].By != "ana" {
				t.Fatalf("archived audit = %v, want %v", audit, wantAudit)
			}

			runs, err := s.List(ctx, 10)
			if err != nil || !slices.Equal(ids(runs), []string{failed.ID, parked.ID, done.ID}) {
				t.Fatalf("history = %v, %v; want newest first across Redis and the archive", ids(runs), err)
			}
			if page, _ := s.Page(ctx, 1, 1); !slices.Equal(ids(page), []string{parked.ID}) {
				t.Fatalf("page 2 of 1 = %v", ids(page))
			}

			// A change the run refuses leaves it archived; one it takes brings it back, with its log.
			refused := errors.New("already ended")
			if _, err := s.Update(ctx, done.ID, func(*jobs.Run, *jobs.Change) error { return refused }); !errors.Is(err, refused) {
				t.Fatalf("refused update = %v", err)
			}
			if n, _ := s.rdb.Exists(ctx, runKey(done.ID)).Result(); n != 0 {
				t.Fatal("a refused change brought the run back to Redis")
			}
			back, err := s.Update(ctx, done.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Reason = "reopened"
				c.Emit(jobs.NewEvent(r.ID, "", jobs.RunStartedEvent{}))
				return nil
			})
			if err != nil || back.Reason != "reopened" || back.Version != done.Version+1 {
				t.Fatalf("update of an archived run = %+v, %v", back, err)
			}
			if events, _ := s.Events(ctx, done.ID, "0", 0); len(events) != len(wantEvents)+1 {
				t.Fatalf("events after the run came back = %d, want %d", len(events), len(wantEvents)+1)
			}
			if runs, _ := s.List(ctx, 10); len(runs) != 3 {
				t.Fatalf("a run back in Redis is listed %d times among 3 runs", len(runs))
			}
			// Archived again, its latest state wins over its first line in the index.
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Get(ctx, done.ID); got.Reason != "reopened" {
				t.Fatalf("archived twice: %+v", got)
			}
			if runs, _ := s.List(ctx, 10); len(runs) != 3 {
				t.Fatalf("a run archived twice is listed %d times among 3 runs", len(runs))
			}
		})
	}
}

// TestHistoryPagesInCreationOrder archives runs in random orders and checks that every page is what sorting all runs
// by creation gives: the index is read from its end only as far as a page needs, and must never stop too early.
func TestHistoryPagesInCreationOrder(t *testing.T) {
	rdb := backends(t)["miniredis"]
	ctx := context.Background()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rdb.FlushDB(ctx)
			rng := rand.New(rand.NewPCG(seed, 1))
			c := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			s := New(rdb, c.now)
			s.UseArchive(NewArchive(t.TempDir(), nil), nil)
			var all []*jobs.Run
			open := map[string]bool{}
			for range 120 {
				c.add(time.Duration(rng.IntN(5000)) * time.Millisecond)
				r := newRun()
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				all = append(all, r)
				open[r.ID] = true
				// Some runs end at once, some much later: the index is in order of ending, not of starting.
				for id := range open {
					if rng.IntN(4) == 0 {
						endRun(t, s, id)
						delete(open, id)
					}
				}
				if rng.IntN(10) == 0 {
					if _, err := s.ArchiveFinished(ctx, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			slices.SortStableFunc(all, func(a, b *jobs.Run) int { return b.CreatedAt.Compare(a.CreatedAt) })
			want := ids(all)
			for _, size := range []int{1, 7, 20, 200} {
				var got []string
				for offset := 0; offset < len(want); offset += size {
					page, err := s.Page(ctx, offset, size)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, ids(page)...)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("pages of %d:\n got %v\nwant %v", size, got, want)
				}
			}
		})
	}
}

func endRun(t *testing.T, s *Store, id string) {
	t.Helper()
	_, err := s.Update(context.Background(), id, func(r *jobs.Run, c *jobs.Change) error {
		r.Status, r.EndedAt = jobs.RunCompleted, s.Now().UTC()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPrune(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for _, archive := range []bool{true, false} {
				s, c := open(t)
				if !archive {
					s.archive = nil
				}
				var finished []*jobs.Run
				for range 6 {
					finished = append(finished, finish(t, s, jobs.RunCompleted))
					c.add(24 * time.Hour)
				}
				parked := finish(t, s, jobs.RunParked)
				s.Mirror("slack").SetThread(ctx, "C1:1.2", finished[0].ID)
				s.Mirror("slack").Save(ctx, finished[0].ID, "final", "1")
				if _, err := s.ArchiveFinished(ctx, 0); err != nil {
					t.Fatal(err)
				}
				// Keep 4 runs, and none older than 3.5 days: the three oldest go by count, and by age the fourth.
				gone, err := s.Prune(ctx, Keep{Count: 4, Age: 84 * time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if want := ids(finished[:3]); !slices.Equal(gone, want) {
					t.Fatalf("archive %v: pruned %v, want %v", archive, gone, want)
				}
				runs, _ := s.List(ctx, 100)
				if want := []string{parked.ID, finished[5].ID, finished[4].ID, finished[3].ID}; !slices.Equal(ids(runs), want) {
					t.Fatalf("archive %v: history after pruning = %v, want %v", archive, ids(runs), want)
				}
				if _, err := s.Get(ctx, finished[0].ID); !errors.Is(err, jobs.ErrRunNotFound) {
					t.Fatalf("a pruned run is still there: %v", err)
				}
				if id, _ := s.Mirror("slack").RunOfThread(ctx, "C1:1.2"); !archive && id != "" {
					t.Fatalf("the pruned run's thread is still known: %s", id)
				}
				if st, _ := s.Mirror("slack").State(ctx, finished[0].ID); !archive && len(st) > 0 {
					t.Fatalf("the pruned run's Slack state is still there: %v", st)
				}
				if archive {
					files, _ := filepath.Glob(filepath.Join(s.archive.Dir(), "runs", "*"))
					if len(files) != 3 {
						t.Fatalf("archive files after pruning: %v", files)
					}
				}
				if gone, _ := s.Prune(ctx, Keep{Count: 4, Age: 84 * time.Hour}); len(gone) > 0 {
					t.Fatalf("a second prune removed %v", gone)
				}
			}
		})
	}
}

// TestOneDamagedRunDoesNotHideTheOthers damages a run in Redis and another in the archive.
func TestOneDamagedRunDoesNotHideTheOthers(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			var logged bytes.Buffer
			s.log = slog.New(slog.NewTextHandler(&logged, nil))
			good := finish(t, s, jobs.RunCompleted)
			c.add(time.Second)
			badArchived := finish(t, s, jobs.RunFailed)
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			c.add(time.Second)
			badLive := finish(t, s, jobs.RunParked)
			c.add(time.Second)
			parked := finish(t, s, jobs.RunParked)

			s.rdb.Set(ctx, runKey(badLive.ID), `{"id": "`+badLive.ID+`", "tasks": [`, 0)
			path := filepath.Join(s.archive.Dir(), "runs", badArchived.ID+".json.gz")
			data, _ := os.ReadFile(path)
			os.WriteFile(path, data[:len(data)/2], 0o600)

			runs, err := s.List(ctx, 10)
			if err != nil || !slices.Equal(ids(runs), []string{parked.ID, good.ID}) {
				t.Fatalf("history = %v, %v; want the two good runs", ids(runs), err)
			}
			for _, id := range []string{badLive.ID, badArchived.ID} {
				if !strings.Contains(logged.String(), id) {
					t.Fatalf("no warning names damaged run %s:\n%s", id, logged.String())
				}
			}
			if _, err := s.Get(ctx, badArchived.ID); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("damaged archived run: %v; want an error naming %s", err, path)
			}
			if _, err := s.Get(ctx, badLive.ID); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), runKey(badLive.ID)) {
				t.Fatalf("damaged live run: %v", err)
			}
			if r, err := s.Latest(ctx, nil); err != nil || r.ID != parked.ID {
				t.Fatalf("latest = %v, %v", r, err)
			}
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatalf("archiving with a damaged run in Redis: %v", err)
			}
			// A line torn by a crash while it was appended is skipped, and so are names that are not run ids.
			f, _ := os.OpenFile(s.archive.indexPath(), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"id":"r-torn","crea`)
			f.Close()
			if runs, err := s.List(ctx, 10); err != nil || len(runs) != 2 {
				t.Fatalf("history with a torn index line = %v, %v", ids(runs), err)
			}
			if _, err := s.Get(ctx, "../../etc/passwd"); !errors.Is(err, jobs.ErrRunNotFound) {
				t.Fatalf("a path as a run id: %v", err)
			}
		})
	}
}

// TestAStateDirFromBeforeTheArchive opens a state dir written by orch before runs were archived: every run is
// there, the finished ones move to the archive when the store is closed, and the parked ones stay live.
func TestAStateDirFromBeforeTheArchive(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/redis-before-archive.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "redis.json"), data, 0o600)
	ctx := context.Background()
	b, err := Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	before, err := b.Store.List(ctx, 100)
	if err != nil || len(before) != 6 {
		t.Fatalf("runs before = %d, %v", len(before), err)
	}
	events := map[string]int{}
	for _, r := range before {
		ev, _ := b.Store.Events(ctx, r.ID, "0", 0)
		events[r.ID] = len(ev)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Connect(ctx, ConnectConfig{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	after, err := b.Store.List(ctx, 100)
	if err != nil || !slices.Equal(ids(after), ids(before)) {
		t.Fatalf("runs after = %v, %v; want %v", ids(after), err, ids(before))
	}
	live, _ := b.Store.Live(ctx, 100)
	statuses := map[jobs.RunStatus]int{}
	for _, r := range live {
		statuses[r.Status]++
	}
	if len(live) != 2 || statuses[jobs.RunParked] != 2 {
		t.Fatalf("live runs = %v; want the two parked ones", statuses)
	}
	for _, r := range after {
		ev, _ := b.Store.Events(ctx, r.ID, "0", 0)
		if len(ev) != events[r.ID] {
			t.Fatalf("run %s has %d events, had %d", r.ID, len(ev), events[r.ID])
		}
	}
}

// A damaged history index hides no run: with half of it cut off, the history still lists every run whose file is
// intact, the log says what was repaired, and a prune keeps what it would keep had the index been whole — it never
// deletes a run's file because the index failed to list it.
func TestADamagedIndexIsRebuiltFromTheRunFiles(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			var logged bytes.Buffer
			for range 3 {
				finish(t, s, jobs.RunCompleted)
				c.add(time.Hour)
			}
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(s.archive.indexPath())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.archive.indexPath(), data[len(data)/2:], 0o600); err != nil {
				t.Fatal(err)
			}
			// A process that opens the archive anew, as every orch command does.
			s.UseArchive(NewArchive(s.archive.Dir(), slog.New(slog.NewTextHandler(&logged, nil))), nil)
			got, err := s.List(ctx, 10)
			if err != nil || len(got) != 3 {
				t.Fatalf("history = %v, %v; want all three runs", ids(got), err)
			}
			if !strings.Contains(logged.String(), "the history index was damaged") {
				t.Fatalf("no word of the repair:\n%s", logged.String())
			}
			// The same damage again, seen first by a prune that keeps more than there is.
			if err := os.WriteFile(s.archive.indexPath(), data[len(data)/2:], 0o600); err != nil {
				t.Fatal(err)
			}
			s.UseArchive(NewArchive(s.archive.Dir(), nil), nil)
			if gone, err := s.Prune(ctx, Keep{Count: 10}); err != nil || len(gone) != 0 {
				t.Fatalf("pruned %v, %v; want nothing", gone, err)
			}
			files, _ := filepath.Glob(filepath.Join(s.archive.Dir(), "runs", "*.json.gz"))
			if len(files) != 3 {
				t.Fatalf("run files after the prune: %v", files)
			}
			if got, err := s.List(ctx, 10); err != nil || len(got) != 3 {
				t.Fatalf("history after the prune = %v, %v", ids(got), err)
			}
		})
	}
}
