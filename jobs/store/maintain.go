package store

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// With the embedded store, the process that serves it moves the runs that are over to the archive: every few seconds
// the runs that ended a while ago (whoever still follows them reads them from the archive just the same), and all of
// them when it stops serving. Whoever holds the store also prunes history to what orch.yaml keeps, at most once an
// hour across every process of the deployment.

const (
	maintainEvery = 5 * time.Second
	// archiveAfter is how long a run that ended stays live while the store is served: the moments in which front ends
	// post its last messages.
	archiveAfter = 10 * time.Second
	pruneEvery   = time.Hour
	keyPruned    = "orch:history:pruned"
)

// HistoryDir is where the embedded store in stateDir keeps the runs that are over.
func HistoryDir(stateDir string) string { return filepath.Join(stateDir, "history") }

type maintainer struct {
	b    *Backend
	keep Keep
	log  *slog.Logger
	stop chan struct{}
	wg   sync.WaitGroup
}

func (b *Backend) startMaintenance(keep Keep, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &maintainer{b: b, keep: keep, log: log, stop: make(chan struct{})}
	b.maint = m
	if b.Embedded == nil && keep.IsZero() {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(maintainEvery)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := m.run(ctx, archiveAfter); err != nil {
					m.log.Warn("keeping history", "err", err)
				}
				cancel()
			}
		}
	}()
}

// finish stops the background work and does the last of it: a store that is no longer served has nobody left reading
// its runs from Redis.
func (m *maintainer) finish() error {
	if m == nil {
		return nil
	}
	close(m.stop)
	m.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return m.run(ctx, 0)
}

func (m *maintainer) run(ctx context.Context, minAge time.Duration) error {
	if e := m.b.Embedded; e != nil {
		if !e.Owner() {
			return nil
		}
		if _, err := m.b.Store.ArchiveFinished(ctx, minAge); err != nil {
			return err
		}
	}
	if m.keep.IsZero() {
		return nil
	}
	due, err := m.b.Redis.SetNX(ctx, keyPruned, time.Now().UTC().Format(time.RFC3339), pruneEvery).Result()
	if err != nil || !due {
		return err
	}
	gone, err := m.b.Store.Prune(ctx, m.keep)
	if err != nil {
		return fmt.Errorf("pruning history: %w", err)
	}
	if len(gone) > 0 {
		m.log.Info("history pruned", "runs", len(gone), "keep", m.keep.String())
	}
	return nil
}
