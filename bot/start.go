package bot

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// newRuns starts the runs people ask for in Slack (`/orch run`, `/orch do`, a mention, the message shortcut) within
// the limits on new runs, and has the mirror follow each.
type newRuns struct {
	starter   Starter
	store     *store.Store
	mirror    *mirror.Mirror
	limits    *runLimits
	log       *slog.Logger
	workspace string // absolute; an error names paths in it relative to it
}

// maxErrorEcho bounds the error a reply passes on (one that quotes a request or a plan).
const maxErrorEcho = 2000

// take spends one new run of user's and of channel's (runLimits.take).
func (n *newRuns) take(user, channel string) (refund func(), err error) {
	return n.limits.take(user, channel)
}

// start starts a run and follows it; notStarted says, in a sentence of plain words, why it did not start to wherever
// the request is answered. A run that could not start gives its place under the limits back (refund).
func (n *newRuns) start(ctx context.Context, req StartRequest, notStarted func(context.Context, string), refund func()) {
	run, err := n.starter.Start(ctx, req)
	if err != nil {
		refund()
		if n.store.Ping(ctx) != nil {
			n.log.Warn("starting a run", "err", err)
			notStarted(ctx, unavailableText)
			return
		}
		notStarted(ctx, "Could not start the run: "+safetext.Bound(n.withoutWorkspace(err.Error()), maxErrorEcho))
		return
	}
	if err := n.mirror.Follow(ctx, run.ID); err != nil {
		n.log.Error("following a new run", "run_id", run.ID, "err", err)
	}
}

// withoutWorkspace is msg with the paths in the workspace made relative to it (runs.WithoutWorkspace): where the
// workspace is on the server is no one's business in a channel. The workspace is taken out under both its names, as
// configured and with its symbolic links resolved, since an error may name either.
func (n *newRuns) withoutWorkspace(msg string) string {
	msg = runs.WithoutWorkspace(n.workspace, msg)
	if real, err := filepath.EvalSymlinks(n.workspace); err == nil && real != filepath.Clean(n.workspace) {
		msg = runs.WithoutWorkspace(real, msg)
	}
	return msg
}
