package runs

import (
	"context"

	"github.com/orchrun/orch/jobs"
)

// A Surface is a place people meet runs: the terminal of `orch run` and `orch logs`, a run's Slack thread, the web
// view's live timeline; next, a GitHub issue or a client of the HTTP API. Every surface does the same five things,
// and only showing is its own code:
//
//   - it starts a run from a person's request with Prepare and Start (a Starter does both);
//   - it follows the run's events: Follow for one run, the store's event log for many;
//   - it shows each event by what the event means: Present calls the method of the event's moment;
//   - it puts the run's questions to people (Ask) and takes their answers through escalation.Resolve, which settles
//     a question once, whichever surface answers first: the others learn of the answer from its event (Answered);
//   - it shows the run's end (Ended).
//
// A surface does not switch over event kinds: what an event says is its description (jobs.Event.Describe), and which
// method shows it is Present's. A new surface is a package that implements these five methods; a new kind of event
// needs no change to any surface.
type Surface interface {
	// Progress shows an event that moves a run along: the run began, an attempt began, worked or stopped, work was
	// committed or pushed. The engine's bookkeeping comes here too; its description is Quiet, and a view for people
	// leaves it out.
	Progress(ctx context.Context, ev jobs.Event) error
	// Ask shows the question the run now waits on; q is ev's body.
	Ask(ctx context.Context, ev jobs.Event, q jobs.EscalationEvent) error
	// Answered shows that a question was answered, on this surface or another; a is ev's body.
	Answered(ctx context.Context, ev jobs.Event, a jobs.ResolutionEvent) error
	// Paused shows that the run stopped until someone resumes it.
	Paused(ctx context.Context, ev jobs.Event) error
	// Ended shows the run's end: completed, failed or aborted. No event of the run follows it.
	Ended(ctx context.Context, ev jobs.Event) error
}

// Present hands ev to s by the moment it is, and returns what s returned.
func Present(ctx context.Context, s Surface, ev jobs.Event) error {
	switch ev.Describe().Moment {
	case jobs.MomentAsk:
		if q, ok := ev.Body.(jobs.EscalationEvent); ok {
			return s.Ask(ctx, ev, q)
		}
	case jobs.MomentAnswer:
		if a, ok := ev.Body.(jobs.ResolutionEvent); ok {
			return s.Answered(ctx, ev, a)
		}
	case jobs.MomentPause:
		return s.Paused(ctx, ev)
	case jobs.MomentEnd:
		return s.Ended(ctx, ev)
	}
	return s.Progress(ctx, ev)
}

// Ends reports whether ev ends its run: no event of the run follows it.
func Ends(ev jobs.Event) bool { return ev.Body != nil && ev.Describe().Moment == jobs.MomentEnd }
