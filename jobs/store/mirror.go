package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Mirror is what a front end that mirrors runs' logs somewhere else (Slack today: a thread per run) keeps in Redis, so
// that a restarted front end carries on where the last one stopped, and several processes of it can share the work:
// the runs it follows, what it has posted of each (a run's state: fields the front end names), which of its threads
// belongs to which run, a lock per run, and the requests it has already seen.
//
// Its keys are the front end's own, under "orch:<name>:": followed runs in the set "active", the thread index in the
// hash "thread" ("<thread>" → run id), a run's state in the hash "run:{ID}", its lock in "lock:{ID}", and a seen
// request in "once:<key>". These names are what deployments have in Redis: changing them loses every thread.
type Mirror struct {
	rdb    redis.UniversalClient
	prefix string
}

// Mirror returns the state of the front end called name, a short lowercase word ("slack").
func (s *Store) Mirror(name string) *Mirror {
	return &Mirror{rdb: s.rdb, prefix: "orch:" + name + ":"}
}

func (m *Mirror) name() string {
	return strings.TrimSuffix(strings.TrimPrefix(m.prefix, "orch:"), ":")
}

func (m *Mirror) followedKey() string          { return m.prefix + "active" }
func (m *Mirror) threadsKey() string           { return m.prefix + "thread" }
func (m *Mirror) stateKey(runID string) string { return m.prefix + "run:{" + runID + "}" }
func (m *Mirror) lockKey(runID string) string  { return m.prefix + "lock:{" + runID + "}" }
func (m *Mirror) onceKey(key string) string    { return m.prefix + "once:" + key }

// Follow adds a run to those the front end keeps up to date. Following a run twice is following it once.
func (m *Mirror) Follow(ctx context.Context, runID string) error {
	if err := m.rdb.SAdd(ctx, m.followedKey(), runID).Err(); err != nil {
		return fmt.Errorf("following run %s: %w", runID, err)
	}
	return nil
}

// Unfollow stops following a run; a run not followed is left as it is.
func (m *Mirror) Unfollow(ctx context.Context, runID string) error {
	if err := m.rdb.SRem(ctx, m.followedKey(), runID).Err(); err != nil {
		return fmt.Errorf("unfollowing run %s: %w", runID, err)
	}
	return nil
}

// Followed returns the ids of the runs followed, in no particular order.
func (m *Mirror) Followed(ctx context.Context) ([]string, error) {
	ids, err := m.rdb.SMembers(ctx, m.followedKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("listing followed runs: %w", err)
	}
	return ids, nil
}

// State returns the fields saved of a run (an empty map for a run nothing was saved of).
func (m *Mirror) State(ctx context.Context, runID string) (map[string]string, error) {
	st, err := m.rdb.HGetAll(ctx, m.stateKey(runID)).Result()
	if err != nil {
		return nil, fmt.Errorf("reading the state of run %s: %w", runID, err)
	}
	return st, nil
}

// Save sets fields of a run's state, given as field, value pairs; the other fields keep their values. The fields are
// written together: a reader sees all of them or none.
func (m *Mirror) Save(ctx context.Context, runID string, fieldValues ...string) error {
	if len(fieldValues)%2 != 0 {
		return fmt.Errorf("saving the state of run %s: want field, value pairs, got %d strings", runID, len(fieldValues))
	}
	if len(fieldValues) == 0 {
		return nil
	}
	if err := m.rdb.HSet(ctx, m.stateKey(runID), fieldValues).Err(); err != nil {
		return fmt.Errorf("saving the state of run %s: %w", runID, err)
	}
	return nil
}

// keyMirrors is the set of the front ends that kept something of runs, for pruning to forget it with the runs.
const keyMirrors = "orch:mirrors"

// SetThread records that thread, the front end's name for a place (Slack's "<channel>:<thread ts>"), is run runID's.
func (m *Mirror) SetThread(ctx context.Context, thread, runID string) error {
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, m.threadsKey(), thread, runID)
		p.SAdd(ctx, keyMirrors, m.name())
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording the thread of run %s: %w", runID, err)
	}
	return nil
}

// RunOfThread returns the id of the run whose thread is thread, or "" when it is no run's.
func (m *Mirror) RunOfThread(ctx context.Context, thread string) (string, error) {
	id, err := m.rdb.HGet(ctx, m.threadsKey(), thread).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("finding the run of a thread: %w", err)
	}
	return id, nil
}

// TryLock takes a run's lock for ttl, without waiting: ok is false when someone holds it. The lock is a token of this
// call, so that release gives back this lock only: once ttl has passed another may take the lock, and a late release
// then leaves the new holder's alone. release outlives ctx (it runs when the caller's context is done too); should it
// fail, the lock goes at the end of its ttl. A holder must be done before ttl passes: nothing extends it.
func (m *Mirror) TryLock(ctx context.Context, runID string, ttl time.Duration) (release func(), ok bool, err error) {
	key, token := m.lockKey(runID), newToken()
	ok, err = m.rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, false, fmt.Errorf("locking run %s: %w", runID, err)
	}
	if !ok {
		return nil, false, nil
	}
	ctx = context.WithoutCancel(ctx)
	return func() { unlockScript.Run(ctx, m.rdb, []string{key}, token) }, true, nil
}

// unlockScript deletes a lock only if it still holds the caller's token.
var unlockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Once reports whether key is seen for the first time in ttl: of any number of calls with the same key, in this
// process or another, one gets true until ttl has passed. It makes handling a request that can arrive twice (a
// retried delivery, a double click) happen once.
func (m *Mirror) Once(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	first, err := m.rdb.SetNX(ctx, m.onceKey(key), "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("checking whether %s was seen: %w", key, err)
	}
	return first, nil
}

// Unsee undoes Once for key: the next Once with it is a first time again. It is for a request that was seen but not
// taken (refused as busy), which its sender will send again as it was.
func (m *Mirror) Unsee(ctx context.Context, key string) error {
	if err := m.rdb.Del(ctx, m.onceKey(key)).Err(); err != nil {
		return fmt.Errorf("forgetting that %s was seen: %w", key, err)
	}
	return nil
}

// Forget deletes what the front end kept of runs that are gone: their state, locks, threads, and their place among the
// runs followed.
func (m *Mirror) Forget(ctx context.Context, runIDs []string) error {
	gone := make(map[string]bool, len(runIDs))
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range runIDs {
			gone[id] = true
			p.Del(ctx, m.stateKey(id), m.lockKey(id))
			p.SRem(ctx, m.followedKey(), id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("forgetting runs: %w", err)
	}
	iter := m.rdb.HScan(ctx, m.threadsKey(), 0, "", 500).Iterator()
	var threads []string
	for iter.Next(ctx) {
		thread := iter.Val()
		if !iter.Next(ctx) {
			break
		}
		if gone[iter.Val()] {
			threads = append(threads, thread)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("forgetting runs' threads: %w", err)
	}
	if len(threads) > 0 {
		if err := m.rdb.HDel(ctx, m.threadsKey(), threads...).Err(); err != nil {
			return fmt.Errorf("forgetting runs' threads: %w", err)
		}
	}
	return nil
}
