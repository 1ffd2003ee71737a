package bot

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// maxOpenRuns bounds how many waiting runs one look at the open questions reads: a deployment with more has a
// backlog no list in Slack would show whole anyway.
const maxOpenRuns = 500

// openQuestions returns the open questions of Slack runs that user may answer from where they look (channel; "" for
// the Home), oldest first: at most limit of them, and how many there are in all (up to maxOpenRuns runs' worth).
func (s *Server) openQuestions(ctx context.Context, user, channel string, limit int) ([]blocks.Question, int, error) {
	if !s.allowed(user) {
		return nil, 0, nil
	}
	var all []blocks.Question
	for offset := 0; offset < maxOpenRuns; {
		page, more, err := s.cfg.Store.Find(ctx, store.Query{Status: store.StatusOpen}, offset, 100)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range page {
			if e := r.OpenEscalation(); e != nil && r.Origin.Kind == "slack" && s.mayAnswer(user, channel, r) {
				all = append(all, blocks.Question{Run: r, Escalation: e})
			}
		}
		offset += len(page)
		if !more || len(page) == 0 {
			break
		}
	}
	slices.SortFunc(all, func(a, b blocks.Question) int {
		return cmp.Or(a.Escalation.CreatedAt.Compare(b.Escalation.CreatedAt), strings.Compare(a.Run.ID, b.Run.ID))
	})
	n := len(all)
	return all[:min(n, max(limit, 0))], n, nil
}

// mayAnswer reports whether user may see and answer run r's questions away from its thread (the Home, /orch questions
// in channel; "" for none). Someone in ORCH_ALLOWED_USERS may answer every run's. Without that list, which lets anyone
// answer in the channels they are in, a person sees only the questions of the runs they started and, in a channel, of
// the runs started there: never a question of a channel they may not be in.
func (s *Server) mayAnswer(user, channel string, r *jobs.Run) bool {
	switch {
	case !s.allowed(user):
		return false
	case len(s.cfg.AllowedUsers) > 0:
		return true
	}
	return r.Origin.User == user || channel != "" && r.Origin.Channel == channel
}

// threadLink is a link to a message in a channel (a run's root message opens its thread), or "" when Slack did not
// say where the workspace lives (auth.test's url). Slack's web and desktop clients open such links in place.
func (s *Server) threadLink(channel, ts string) string {
	if s.teamURL == "" || channel == "" || ts == "" {
		return ""
	}
	return s.teamURL + "archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
}
