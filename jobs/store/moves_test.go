package store

import (
	"context"
	"errors"
	"testing"

	"github.com/orchrun/orch/jobs"
)

// A change that moves a run or a task where the domain's table does not allow is refused whole: the error says which
// move, and nothing of the change (its other fields, its events) is saved.
func TestUpdateRefusesIllegalMoves(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)
			r := newRun()
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Status, r.Tasks[0].Status = jobs.RunRunning, jobs.TaskRunning
				return nil
			}); err != nil {
				t.Fatalf("a legal move: %v", err)
			}
			for _, c := range []struct {
				name string
				move func(*jobs.Run)
				want jobs.IllegalMove
			}{
				{"run back to queued", func(r *jobs.Run) { r.Status = jobs.RunQueued },
					jobs.IllegalMove{RunID: r.ID, From: "running", To: "queued"}},
				{"task forced while it runs", func(r *jobs.Run) { r.Tasks[0].Status = jobs.TaskForced },
					jobs.IllegalMove{RunID: r.ID, TaskID: "1.1", From: "running", To: "forced"}},
				{"task to a status that is none", func(r *jobs.Run) { r.Tasks[1].Status = "done" },
					jobs.IllegalMove{RunID: r.ID, TaskID: "1.2", From: "pending", To: "done"}},
			} {
				_, err := s.Update(ctx, r.ID, func(r *jobs.Run, ch *jobs.Change) error {
					r.Reason = "changed"
					ch.Emit(jobs.NewEvent(r.ID, "", jobs.RunPausedEvent{Reason: "x"}))
					c.move(r)
					return nil
				})
				var illegal *jobs.IllegalMove
				if !errors.As(err, &illegal) || *illegal != c.want {
					t.Fatalf("%s: err = %v, want %+v", c.name, err, c.want)
				}
				got, _ := s.Get(ctx, r.ID)
				evs, _ := s.Events(ctx, r.ID, "", 0)
				if got.Reason != "" || got.Status != jobs.RunRunning || got.Version != 2 || len(evs) != 0 {
					t.Fatalf("%s: the refused change was saved: %+v, %d events", c.name, got, len(evs))
				}
			}

			// The end is for good.
			if _, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Status = jobs.RunCompleted
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			_, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Status = jobs.RunRunning
				return nil
			})
			if want := "run " + r.ID + " cannot go from completed to running; the change was not saved"; err == nil || err.Error() != want {
				t.Fatalf("a completed run started again: %v", err)
			}
		})
	}
}

// A change refused on an archived run leaves it in the archive: it is not brought back to Redis to be refused there.
func TestArchivedRunRefusesIllegalMovesWhereItIs(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := open(t)
			done := finish(t, s, jobs.RunCompleted)
			if n, err := s.ArchiveFinished(ctx, 0); err != nil || n != 1 {
				t.Fatalf("archive: moved %d, %v", n, err)
			}
			_, err := s.Update(ctx, done.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Status = jobs.RunRunning
				return nil
			})
			var illegal *jobs.IllegalMove
			if !errors.As(err, &illegal) {
				t.Fatalf("a completed run started again: %v", err)
			}
			if n, _ := s.rdb.Exists(ctx, runKey(done.ID)).Result(); n != 0 {
				t.Fatal("the refused change brought the run back to Redis")
			}
		})
	}
}

// A move of the domain that refuses itself (it changes nothing and notes the move on the change) makes the store
// refuse the whole change with that *jobs.IllegalMove; the legal moves of the change are not saved either, nor its
// events.
func TestUpdateRefusesIllegalMovesMadeByMethods(t *testing.T) {
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := New(rdb, nil)
			r := newRun()
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Start(c, "")
				r.StartAttempt(c, r.Tasks[0], "d1", "", s.Now())
				return nil
			}); err != nil {
				t.Fatalf("legal moves: %v", err)
			}
			if evs, _ := s.Events(ctx, r.ID, "", 0); len(evs) != 2 || evs[0].Type() != "run_started" || evs[1].Type() != "task_started" {
				t.Fatalf("the legal moves' events: %+v", evs)
			}
			_, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Reason = "changed"
				r.Pause(c, "1.1", "the brain is away") // legal: saved only if the whole change is
				r.Tasks[0].Force(c)                    // running → forced: refused
				r.Tasks[1].Reopen(c)
				return nil
			})
			wantMove := jobs.IllegalMove{RunID: r.ID, TaskID: "1.1", From: "running", To: "forced"}
			var illegal *jobs.IllegalMove
			if !errors.As(err, &illegal) || *illegal != wantMove {
				t.Fatalf("err = %v, want %+v", err, wantMove)
			}
			got, _ := s.Get(ctx, r.ID)
			evs, _ := s.Events(ctx, r.ID, "", 0)
			if got.Reason != "" || got.Status != jobs.RunRunning || got.Tasks[0].Status != jobs.TaskRunning || len(evs) != 2 {
				t.Fatalf("the refused change was saved: %+v, %d events", got, len(evs))
			}
		})
	}
}

// An archived run refuses a move of the domain out of its end where it is: it is not brought back to Redis for it.
func TestArchivedRunRefusesIllegalMovesMadeByMethods(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := open(t)
			done := finish(t, s, jobs.RunFailed)
			if n, err := s.ArchiveFinished(ctx, 0); err != nil || n != 1 {
				t.Fatalf("archive: moved %d, %v", n, err)
			}
			_, err := s.Update(ctx, done.ID, func(r *jobs.Run, c *jobs.Change) error {
				r.Resume(c)
				return nil
			})
			var illegal *jobs.IllegalMove
			if !errors.As(err, &illegal) || *illegal != (jobs.IllegalMove{RunID: done.ID, From: "failed", To: "running"}) {
				t.Fatalf("a failed run resumed from the archive: %v", err)
			}
			if n, _ := s.rdb.Exists(ctx, runKey(done.ID)).Result(); n != 0 {
				t.Fatal("the refused change brought the run back to Redis")
			}
		})
	}
}
