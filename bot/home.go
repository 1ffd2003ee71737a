package bot

import (
	"context"
	"errors"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/jobs"
)

// homeClick answers a question from a button on someone's Home, then republishes the Home, the outcome at its top
// when there is something to say (there is no response_url to say it through).
func (a *answers) homeClick(ctx context.Context, act blocks.ActionValue, user, viewID string) {
	if act.Kind == blocks.KindAnswer {
		return // the answer form opens from its own handler
	}
	ok, err := a.mirror.IsHome(ctx, user, viewID)
	switch {
	case err != nil:
		a.log.Warn("checking a click on the Home", "run_id", act.RunID, "err", err)
		a.mirror.TellHome(user, unavailableText)
	case !ok:
		a.log.Warn("a click whose view is not the Home orch published to its user", "user", user,
			"run_id", act.RunID, "escalation", act.EscalationID)
		a.mirror.TellHome(user, "That button is not on the Home orch last showed you, so it answered nothing: "+
			"here is your Home as it is now.")
	default:
		if text := a.homeQuestion(ctx, act, user); text != "" {
			a.mirror.TellHome(user, text)
		} else if text := a.resolveClick(ctx, act, user); text != "" {
			a.mirror.TellHome(user, text)
		}
	}
	if err := a.mirror.PublishHome(ctx, user); err != nil {
		a.log.Warn("publishing a Home tab", "user", user, "err", err)
	}
}

// homeQuestion says why user may not answer, from the Home, the question a Home button names ("" when they may):
// the Home shows only what Allowlist.MayAnswer lets a person see, and a click must not reach further.
func (a *answers) homeQuestion(ctx context.Context, act blocks.ActionValue, user string) string {
	if !a.talk.allowed.Allows(user) {
		return "" // refused, and audited, as any click of theirs
	}
	run, err := a.store.Get(ctx, act.RunID)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		return doesNotMatchText
	case err != nil:
		a.log.Warn("checking a click on the Home", "run_id", act.RunID, "err", err)
		return unavailableText
	case run.Origin.Kind != "slack" || !a.talk.allowed.MayAnswer(user, "", run):
		a.log.Warn("a Home click on a question its user may not answer from there", "user", user, "run_id", act.RunID)
		return "That question is not yours to answer from here: answer it in its run's thread."
	}
	return ""
}
