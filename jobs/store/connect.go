package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/internal/localredis"
	"github.com/orchrun/orch/jobs/queue"
)

// Backend is an open connection to orch's state: the store, the queue, and the Redis under both.
type Backend struct {
	Store    *Store
	Queue    *queue.Queue
	Redis    redis.UniversalClient
	Embedded *localredis.Embedded // nil with an external Redis
	maint    *maintainer
}

// ConnectConfig says which Redis to use.
type ConnectConfig struct {
	// URL of a Redis server (redis://…, rediss://…) or of a Sentinel-managed primary (redis+sentinel://…, see
	// RedisURL). Empty means the embedded store in StateDir.
	URL string
	// Password is the Redis password when URL holds none (ORCH_REDIS_PASSWORD).
	Password string
	StateDir string
	Log      *slog.Logger
	Now      func() time.Time
	// Keep is what history keeps of the runs that are over (orch.yaml history.keep); the zero Keep keeps them all.
	Keep Keep
}

// ErrRedisUnavailable wraps a failure to reach the configured Redis.
var ErrRedisUnavailable = errors.New("redis unavailable")

// Connect opens the backend and checks that Redis answers.
func Connect(ctx context.Context, cfg ConnectConfig) (*Backend, error) {
	b := &Backend{}
	where, sentinel := "", false
	if cfg.URL != "" {
		u, err := ParseRedisURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		u = u.WithPassword(cfg.Password)
		b.Redis, where = u.client(), u.Where()
		sentinel = u.Sentinel()
	} else {
		if cfg.StateDir == "" {
			cfg.StateDir = ".orch"
		}
		e, err := localredis.Open(cfg.StateDir, cfg.Log)
		if err != nil {
			return nil, err
		}
		b.Embedded = e
		b.Redis = redis.NewClient(&redis.Options{
			Addr: e.Addr(),
			// Every connection goes through the embedded store: it reaches whichever orch process serves the state
			// dir now, and makes this one serve it when the one that did has ended.
			Dialer: e.Dial,
			// A handover (the serving process saving on its way out) takes a moment: dial again soon and often
			// enough to outlast it, rather than fail the command.
			DialerRetries:      localredis.HandoverDialRetries,
			DialerRetryTimeout: localredis.HandoverDialBackoff,
			DialTimeout:        dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		})
		where = e.Addr()
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := b.Redis.Ping(pctx).Err(); err != nil {
		b.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrRedisUnavailable, where, err)
	}
	b.Store = New(b.Redis, cfg.Now)
	if cfg.Log != nil {
		b.Store.log = cfg.Log
	}
	if b.Embedded != nil {
		b.Store.UseArchive(NewArchive(HistoryDir(cfg.StateDir), cfg.Log), cfg.Log)
		b.Store.durable = b.Embedded.Sync
		b.Store.pollEvents = embeddedEventPoll
	}
	if sentinel {
		b.Store.WaitForReplicas(waitReplicas, waitTimeout)
	}
	b.Queue = queue.New(b.Redis)
	b.startMaintenance(cfg.Keep, cfg.Log)
	return b, nil
}

// Sync returns once every write made before it is saved: nil at once with a Redis server (which persists on its own
// terms), the embedded store's Sync otherwise.
func (b *Backend) Sync(ctx context.Context) error {
	if b.Embedded == nil {
		return nil
	}
	return b.Embedded.Sync(ctx)
}

// Close releases the backend. The process that serves the embedded store archives the runs that are over and saves
// the rest on its way out; Close returns that save's error.
func (b *Backend) Close() error {
	var errs []error
	if err := b.maint.finish(); err != nil {
		errs = append(errs, fmt.Errorf("archiving finished runs: %w", err))
	}
	if b.Redis != nil {
		errs = append(errs, b.Redis.Close())
	}
	if b.Embedded != nil {
		errs = append(errs, b.Embedded.Close())
	}
	return errors.Join(errs...)
}
