package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
)

// What teams spend is kept two ways, both written in the transaction of the run update that changes it:
//
//   - the ledger of a team with a budget, one hash a period (budgetKey): spent, held by running attempts, extended.
//     The update watches it with the run, so that two workers that race for a team's last dollar cannot both start
//     an attempt: the second's transaction fails, is played again, and sees the first's hold.
//   - the day's spend of every team (spendKey), only ever added to, kept for `orch costs --team` and the metric.

// keyTeams is a set: every team that ever spent, for listings.
const keyTeams = "orch:spend:teams"

// spendKept is how long a team's daily spend is kept.
const spendKept = 400 * 24 * time.Hour

func budgetKey(team, period string) string { return "orch:budget:" + team + ":" + period }
func spendKey(team string, day time.Time) string {
	return "orch:spend:" + team + ":" + day.UTC().Format("2006-01-02")
}

// UseBudgets has the store keep the ledger of every team that budgets names (orch.yaml budgets.per_team).
func (s *Store) UseBudgets(budgets map[string]jobs.TeamBudget) { s.budgets = budgets }

// OnSpend has fn hear what each committed update added to a team's spend.
func (s *Store) OnSpend(fn func(team string, usd float64)) { s.onSpend = fn }

// Budget is the budget of team, if it has one.
func (s *Store) Budget(team string) (jobs.TeamBudget, bool) {
	b, ok := s.budgets[team]
	return b, ok && team != ""
}

// ledgerOf reads, in transaction tx, the ledger of run r's team for the period holding now: nil when the team has no
// budget. The ledger's key is watched from here on.
func (s *Store) ledgerOf(ctx context.Context, tx *redis.Tx, r *jobs.Run, now time.Time) (*jobs.Ledger, error) {
	team := r.Team()
	b, ok := s.Budget(team)
	if !ok {
		return nil, nil
	}
	l := &jobs.Ledger{Team: team, Key: b.Period.Key(now)}
	key := budgetKey(team, l.Key)
	if err := tx.Watch(ctx, key).Err(); err != nil {
		return nil, err
	}
	h, err := tx.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("reading the budget of team %s: %w", team, err)
	}
	return l, decodeLedger(h, l)
}

func decodeLedger(h map[string]string, l *jobs.Ledger) error {
	var err error
	num := func(f string) float64 {
		v, perr := strconv.ParseFloat(h[f], 64)
		if perr != nil && h[f] != "" {
			err = errors.Join(err, fmt.Errorf("ledger %s %s: %q is not a number", l.Team, f, h[f]))
		}
		return v
	}
	l.SpentUSD, l.ReservedUSD, l.ExtraUSD = num("spent"), num("reserved"), num("extra")
	l.Running, l.Attempts = int(num("running")), int(num("attempts"))
	return err
}

// writeLedger writes l in pipeline p, kept a while past its period for people reading it.
func (s *Store) writeLedger(ctx context.Context, p redis.Pipeliner, l *jobs.Ledger, now time.Time) {
	key := budgetKey(l.Team, l.Key)
	p.HSet(ctx, key, "spent", fmtUSD(l.SpentUSD), "reserved", fmtUSD(l.ReservedUSD), "extra", fmtUSD(l.ExtraUSD),
		"running", l.Running, "attempts", l.Attempts)
	b, _ := s.Budget(l.Team)
	_, end := b.Period.Span(now)
	p.ExpireAt(ctx, key, end.Add(spendKept))
}

// writeSpend adds usd to team's spend of the day of now, in pipeline p.
func writeSpend(ctx context.Context, p redis.Pipeliner, team string, usd float64, attempts int, now time.Time) {
	key := spendKey(team, now)
	p.HIncrByFloat(ctx, key, "usd", usd)
	if attempts > 0 {
		p.HIncrBy(ctx, key, "attempts", int64(attempts))
	}
	p.Expire(ctx, key, spendKept)
	p.SAdd(ctx, keyTeams, team)
}

func fmtUSD(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// account counts in the team's books what an update did to run r's account (from before to after): the ledger of a
// team with a budget, the day's spend of any team. It returns what the update added to the team's spend.
func (s *Store) account(ctx context.Context, p redis.Pipeliner, r *jobs.Run, c *jobs.Change, before jobs.Account, led jobs.Ledger, now time.Time) float64 {
	after := jobs.AccountOf(r)
	if c.Ledger != nil {
		c.Ledger.Apply(before, after)
		if *c.Ledger != led {
			s.writeLedger(ctx, p, c.Ledger, now)
		}
	}
	spent := after.SpentUSD - before.SpentUSD
	if team := r.Team(); team != "" && spent > 0 {
		writeSpend(ctx, p, team, spent, max(before.Held-after.Held, 0), now)
	}
	return spent
}

// DaySpend is what a team spent on one day (UTC).
type DaySpend struct {
	Day      time.Time `json:"day"`
	USD      float64   `json:"usd"`
	Attempts int       `json:"attempts"`
}

// TeamSpend returns what team spent each day from since to until (UTC days, both included), oldest first, days without
// spend left out.
func (s *Store) TeamSpend(ctx context.Context, team string, since, until time.Time) ([]DaySpend, error) {
	var days []time.Time
	for d := since.UTC().Truncate(24 * time.Hour); !d.After(until.UTC()); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
		if len(days) > 400 {
			return nil, errors.New("a span of more than 400 days")
		}
	}
	cmds := make([]*redis.MapStringStringCmd, len(days))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range days {
			cmds[i] = p.HGetAll(ctx, spendKey(team, d))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the spend of team %s: %w", team, err)
	}
	var out []DaySpend
	for i, cmd := range cmds {
		h := cmd.Val()
		if len(h) == 0 {
			continue
		}
		usd, _ := strconv.ParseFloat(h["usd"], 64)
		n, _ := strconv.Atoi(h["attempts"])
		out = append(out, DaySpend{Day: days[i], USD: usd, Attempts: n})
	}
	return out, nil
}

// Teams lists every team that ever spent, sorted.
func (s *Store) Teams(ctx context.Context) ([]string, error) {
	teams, err := s.rdb.SMembers(ctx, keyTeams).Result()
	sort.Strings(teams)
	return teams, err
}

// LedgerOf reads the ledger of team's budget for the period holding now; false when the team has no budget.
func (s *Store) LedgerOf(ctx context.Context, team string, now time.Time) (jobs.Ledger, jobs.TeamBudget, bool, error) {
	b, ok := s.Budget(team)
	if !ok {
		return jobs.Ledger{}, b, false, nil
	}
	l := jobs.Ledger{Team: team, Key: b.Period.Key(now)}
	h, err := s.rdb.HGetAll(ctx, budgetKey(team, l.Key)).Result()
	if err != nil {
		return l, b, true, err
	}
	return l, b, true, decodeLedger(h, &l)
}
