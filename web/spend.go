package web

import (
	"net/http"
	"sort"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// spendDays is how far back the spend page looks.
const spendDays = 7

// teamSpend is one team on the spend page: what it spent each of the last days, and where its budget stands.
type teamSpend struct {
	Team     string
	Days     []store.DaySpend
	TotalUSD float64
	// Budget is "$12.40 of $50.00 this day", "" for a team without a budget; Left what it may still spend.
	Budget string
	Over   bool
}

// handleSpend shows what each team spent over the last week, and where its budget stands this period.
func (s *Server) handleSpend(w http.ResponseWriter, r *http.Request, p person) {
	ctx := r.Context()
	teams, err := s.cfg.Store.Teams(ctx)
	if err != nil {
		s.message(w, r, p, http.StatusServiceUnavailable, "The store does not answer", err.Error())
		return
	}
	now := s.cfg.Now()
	var rows []teamSpend
	for _, team := range teams {
		days, err := s.cfg.Store.TeamSpend(ctx, team, now.Add(-(spendDays-1)*24*time.Hour), now)
		if err != nil {
			s.message(w, r, p, http.StatusServiceUnavailable, "The store does not answer", err.Error())
			return
		}
		row := teamSpend{Team: team, Days: days}
		for _, d := range days {
			row.TotalUSD += d.USD
		}
		if l, b, ok, err := s.cfg.Store.LedgerOf(ctx, team, now); err == nil && ok {
			row.Budget = jobs.USD(l.SpentUSD) + " of " + jobs.USD(b.USD+l.ExtraUSD) + " this " + string(b.Period)
			row.Over = l.Left(b) <= 0
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].TotalUSD > rows[j].TotalUSD })
	s.render(w, r, http.StatusOK, "spend", map[string]any{"Person": p, "Teams": rows, "Days": spendDays})
}
