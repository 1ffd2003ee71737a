package bot

import (
	"context"
	"log/slog"

	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs/store"
)

// newRuns starts the runs people ask for in Slack (`/orch run`, `/orch do`, a mention, the message shortcut) within
// the limits on new runs, and has the mirror follow each.
type newRuns struct {
	starter Starter
	store   *store.Store
	mirror  *mirror.Mirror
	limits  *runLimits
	log     *slog.Logger
}

// maxErrorEcho bounds the error a reply passes on (one that quotes a request or a plan).
const maxErrorEcho = 2000

// take spends one new run of user's and of channel's (runLimits.take).
func (n *newRuns) take(user, channel string) (refund func(), err error) {
	return n.limits.take(user, channel)
}

// start starts a run and follows it; tell says what went wrong to whoever asked.
// A run that could not start gives its place under the limits back (refund).
func (n *newRuns) start(ctx context.Context, req StartRequest, tell func(context.Context, string), refund func()) {
	run, err := n.starter.Start(ctx, req)
	if err != nil {
		refund()
		if n.store.Ping(ctx) != nil {
			n.log.Warn("starting a run", "err", err)
			tell(ctx, unavailableText)
			return
		}
		tell(ctx, "Could not start the run: "+safetext.Bound(err.Error(), maxErrorEcho))
		return
	}
	if err := n.mirror.Follow(ctx, run.ID); err != nil {
		n.log.Error("following a new run", "run_id", run.ID, "err", err)
	}
}
