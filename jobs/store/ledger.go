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

// ledgers reads, in transaction tx, the ledgers an update of run r at now may change: the current period's of its
// team, when the team has a budget, and every one its attempts hold money of (a hold is given back where it was taken,
// though the period has turned or the budget was removed since). Their keys are watched from here on. cur is the
// current period's, nil for a team without a budget.
func (s *Store) ledgers(ctx context.Context, tx *redis.Tx, r *jobs.Run, before jobs.Account, now time.Time) (map[string]*jobs.Ledger, *jobs.Ledger, error) {
	team := r.Team()
	if team == "" {
		return nil, nil, nil
	}
	b, budgeted := s.Budget(team)
	keys := map[string]bool{}
	cur := ""
	if budgeted {
		cur = b.Period.Key(now)
		keys[cur] = true
	}
	for k := range before.Holds {
		if k == "" {
			k = cur // a hold taken before holds named their ledger
		}
		if k != "" {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return nil, nil, nil
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, budgetKey(team, k))
	}
	if err := tx.Watch(ctx, names...).Err(); err != nil {
		return nil, nil, err
	}
	out := map[string]*jobs.Ledger{}
	for k := range keys {
		h, err := tx.HGetAll(ctx, budgetKey(team, k)).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the budget of team %s: %w", team, err)
		}
		l := &jobs.Ledger{Team: team, Key: k}
		if err := decodeLedger(h, l); err != nil {
			return nil, nil, err
		}
		out[k] = l
	}
	return out, out[cur], nil
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
func (s *Store) writeLedger(ctx context.Context, p redis.Pipeliner, l *jobs.Ledger) {
	key := budgetKey(l.Team, l.Key)
	p.HSet(ctx, key, "spent", fmtUSD(l.SpentUSD), "reserved", fmtUSD(l.ReservedUSD), "extra", fmtUSD(l.ExtraUSD),
		"running", l.Running, "attempts", l.Attempts)
	p.Expire(ctx, key, 32*24*time.Hour+spendKept)
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

// account counts in the team's books what an update did to run r's account (from before to after): each ledger's holds
// where they were taken, the spend in the current period's (cur, nil for a team without a budget), the day's spend
// of any team. read holds the ledgers as the update read them, orig their values then. It returns what the update
// added to the team's spend.
func (s *Store) account(ctx context.Context, p redis.Pipeliner, r *jobs.Run, before jobs.Account,
	read map[string]*jobs.Ledger, orig map[string]jobs.Ledger, cur *jobs.Ledger, now time.Time) float64 {
	after := jobs.AccountOf(r)
	spent := after.SpentUSD - before.SpentUSD
	curKey := ""
	if cur != nil {
		curKey = cur.Key
		cur.SpentUSD += spent
	}
	keys := map[string]bool{}
	for k := range before.Holds {
		keys[k] = true
	}
	for k := range after.Holds {
		keys[k] = true
	}
	for k := range keys {
		name := k
		if name == "" {
			name = curKey
		}
		if l := read[name]; l != nil {
			l.Hold(before.Holds[k], after.Holds[k])
		}
	}
	for k, l := range read {
		if *l != orig[k] {
			s.writeLedger(ctx, p, l)
		}
	}
	// What an attempt cost may be saved before its outcome (when its agent ends, in case the outcome is lost): the
	// money and the attempt are each counted in the update that records them.
	if settled := max(after.Settled-before.Settled, 0); r.Team() != "" && (spent > 0 || settled > 0) {
		writeSpend(ctx, p, r.Team(), max(spent, 0), settled, now)
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
