package bot

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// openQuestion is a question that waits for a person, with its run.
type openQuestion struct {
	Run        *jobs.Run
	Escalation *jobs.Escalation
}

// maxOpenRuns bounds how many waiting runs one look at the open questions reads: a deployment with more has a
// backlog no list in Slack would show whole anyway.
const maxOpenRuns = 500

// openQuestions returns the open questions that user may answer, oldest first: at most limit of them, and how many
// there are in all (up to maxOpenRuns runs' worth). Someone outside ORCH_ALLOWED_USERS may answer none.
func (s *Server) openQuestions(ctx context.Context, user string, limit int) ([]openQuestion, int, error) {
	if !s.allowed(user) {
		return nil, 0, nil
	}
	var all []openQuestion
	for offset := 0; offset < maxOpenRuns; {
		page, more, err := s.cfg.Store.Find(ctx, store.Query{Status: store.StatusOpen}, offset, 100)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range page {
			if e := r.OpenEscalation(); e != nil {
				all = append(all, openQuestion{Run: r, Escalation: e})
			}
		}
		offset += len(page)
		if !more || len(page) == 0 {
			break
		}
	}
	slices.SortFunc(all, func(a, b openQuestion) int {
		return cmp.Or(a.Escalation.CreatedAt.Compare(b.Escalation.CreatedAt), strings.Compare(a.Run.ID, b.Run.ID))
	})
	n := len(all)
	return all[:min(n, max(limit, 0))], n, nil
}

// threadLink is a link to a message in a channel (a run's root message opens its thread), or "" when Slack did not
// say where the workspace lives (auth.test's url). Slack's web and desktop clients open such links in place.
func (s *Server) threadLink(channel, ts string) string {
	if s.teamURL == "" || channel == "" || ts == "" {
		return ""
	}
	return s.teamURL + "archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
}
