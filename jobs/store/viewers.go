package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// What a front end keeps of the people who look at a view of their own (Slack's App Home tab): the ids of the views it
// last showed each person, newest first, in the list "views:<person>" under the front end's prefix, and who looked
// lately, in the sorted set "viewers" (person → Unix time of the last look). Both expire: the views with their ttl, a
// look after the ttl given to LookedSince's reader, and the set itself when nobody has looked for that long.

func (m *Mirror) viewsKey(person string) string { return m.prefix + "views:" + person }
func (m *Mirror) viewersKey() string            { return m.prefix + "viewers" }

// keptViews is how many of the views last shown to a person are remembered: a view can be replaced while its person
// clicks on it (a refresh published a moment before), and what they clicked on was still orch's.
const keptViews = 5

// SetView records viewID as the view last shown to person, for ttl, beside the few shown before it.
func (m *Mirror) SetView(ctx context.Context, person, viewID string, ttl time.Duration) error {
	key := m.viewsKey(person)
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LRem(ctx, key, 0, viewID)
		p.LPush(ctx, key, viewID)
		p.LTrim(ctx, key, 0, keptViews-1)
		p.Expire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording the view of %s: %w", person, err)
	}
	return nil
}

// ShownView reports whether viewID is one of the views last shown to person.
func (m *Mirror) ShownView(ctx context.Context, person, viewID string) (bool, error) {
	if viewID == "" {
		return false, nil
	}
	ids, err := m.rdb.LRange(ctx, m.viewsKey(person), 0, keptViews-1).Result()
	if err != nil {
		return false, fmt.Errorf("reading the views of %s: %w", person, err)
	}
	return slices.Contains(ids, viewID), nil
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
