package mirror

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/jobs/store"
)

// maxOpenRuns bounds how many waiting runs one look at the open questions reads: a deployment with more has a
// backlog no list in Slack would show whole anyway.
const maxOpenRuns = 500

// openQuestions returns the open questions of Slack runs that user may answer from where they look (channel; "" for
// the Home), oldest first: at most limit of them, and how many there are in all (up to maxOpenRuns runs' worth).
func openQuestions(ctx context.Context, st *store.Store, allowed Allowlist, user, channel string, limit int) ([]blocks.Question, int, error) {
	if !allowed.Allows(user) {
		return nil, 0, nil
	}
	var all []blocks.Question
	for offset := 0; offset < maxOpenRuns; {
		page, more, err := st.Find(ctx, store.Query{Status: store.StatusOpen}, offset, 100)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range page {
			if e := r.OpenEscalation(); e != nil && r.Origin.Kind == "slack" && allowed.MayAnswer(user, channel, r) {
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
