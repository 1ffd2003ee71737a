package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// What a front end keeps of the people who look at a view of their own (Slack's App Home tab): the id of the view it
// last showed each person, in the string "view:<person>" under the front end's prefix, and who looked lately, in the
// sorted set "viewers" (person → Unix time of the last look). Both expire: a view id with its ttl, a look after the
// ttl given to LookedSince's reader, and the set itself when nobody has looked for that long.

func (m *Mirror) viewKey(person string) string { return m.prefix + "view:" + person }
func (m *Mirror) viewersKey() string           { return m.prefix + "viewers" }

// SetView records viewID as the view last shown to person, for ttl.
func (m *Mirror) SetView(ctx context.Context, person, viewID string, ttl time.Duration) error {
	if err := m.rdb.Set(ctx, m.viewKey(person), viewID, ttl).Err(); err != nil {
		return fmt.Errorf("recording the view of %s: %w", person, err)
	}
	return nil
}

// View returns the id of the view last shown to person, or "" when none is on record.
func (m *Mirror) View(ctx context.Context, person string) (string, error) {
	id, err := m.rdb.Get(ctx, m.viewKey(person)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the view of %s: %w", person, err)
	}
	return id, nil
}

// Looked records that person looked at their view at time at. Looks older than ttl are dropped as it goes, and the
// record goes whole when nobody has looked for ttl.
func (m *Mirror) Looked(ctx context.Context, person string, at time.Time, ttl time.Duration) error {
	key := m.viewersKey()
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, key, redis.Z{Score: float64(at.Unix()), Member: person})
		p.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(at.Add(-ttl).Unix(), 10))
		p.Expire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording that %s looked: %w", person, err)
	}
	return nil
}

// LookedSince returns the people who looked at their view at or after since, in no particular order.
func (m *Mirror) LookedSince(ctx context.Context, since time.Time) ([]string, error) {
	people, err := m.rdb.ZRangeByScore(ctx, m.viewersKey(), &redis.ZRangeBy{Min: strconv.FormatInt(since.Unix(), 10),
		Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("listing who looked lately: %w", err)
	}
	return people, nil
}
