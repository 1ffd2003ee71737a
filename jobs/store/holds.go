package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"
)

// A plain workspace (a directory that is not a git repository) has no worktrees to give each run its own copy: one
// run at a time works in it. The run holding it is kept under a key of its own until the run lets it go; the runs
// waiting for it are kept beside, oldest first, so that letting go wakes the next one.

func holdKey(place string) string {
	sum := sha256.Sum256([]byte(place))
	return "orch:workspace:" + hex.EncodeToString(sum[:12])
}

func waitKey(place string) string { return holdKey(place) + ":waiting" }

// takeHold makes ARGV[1] the holder unless another run holds the place; the holder is returned either way, and a run
// that does not get it is noted as waiting (since ARGV[2], ms), one that does is no longer.
var takeHold = redis.NewScript(`
local holder = redis.call("GET", KEYS[1])
if not holder then
  redis.call("SET", KEYS[1], ARGV[1])
  holder = ARGV[1]
end
if holder == ARGV[1] then
  redis.call("ZREM", KEYS[2], ARGV[1])
else
  redis.call("ZADD", KEYS[2], "NX", ARGV[2], ARGV[1])
end
return holder`)

// Hold makes run runID the holder of place (a host and a directory), unless another run holds it: then it returns
// that run's id, holds nothing, and notes runID as waiting.
func (s *Store) Hold(ctx context.Context, place, runID string) (holder string, err error) {
	holder, err = takeHold.Run(ctx, s.rdb, []string{holdKey(place), waitKey(place)}, runID, s.now().UnixMilli()).Text()
	if err != nil || holder == runID {
		return "", err
	}
	return holder, nil
}

// letHold deletes a hold only when its holder is ARGV[1], and then hands back the run that has waited longest.
var letHold = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return false end
redis.call("DEL", KEYS[1])
local next = redis.call("ZRANGE", KEYS[2], 0, 0)
if #next == 0 then return false end
redis.call("ZREM", KEYS[2], next[1])
return next[1]`)

// Let lets go of place if run runID holds it, and returns the run that has waited longest for it ("" for none), for
// the caller to wake. A run that is over lets go of its places; so may anyone who finds the holder over (its worker
// died before it could).
func (s *Store) Let(ctx context.Context, place, runID string) (next string, err error) {
	next, err = letHold.Run(ctx, s.rdb, []string{holdKey(place), waitKey(place)}, runID).Text()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return next, err
}
