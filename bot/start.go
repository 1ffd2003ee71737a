package bot

import (
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs/store"
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
		tell(ctx, "Could not start the run: "+safetext.Bound(n.withoutWorkspace(err.Error()), maxErrorEcho))
		return
	}
	if err := n.mirror.Follow(ctx, run.ID); err != nil {
		n.log.Error("following a new run", "run_id", run.ID, "err", err)
	}
}

// withoutWorkspace is msg with the paths in the workspace made relative to it: where the workspace is on the server is
// no one's business in a channel.
func (n *newRuns) withoutWorkspace(msg string) string {
	ws := filepath.Clean(n.workspace)
	if n.workspace == "" || ws == string(filepath.Separator) {
		return msg
	}
	// The workspace's path where it is whole: followed by a separator (a file in it, now relative), or by what
	// cannot go on a name (the workspace itself, now ".").
	whole := regexp.MustCompile(regexp.QuoteMeta(ws) + `(/|[^\w.\-/]|$)`)
	return whole.ReplaceAllStringFunc(msg, func(m string) string {
		rest := strings.TrimPrefix(m, ws)
		if rest == "/" {
			return ""
		}
		return "." + rest
	})
}
