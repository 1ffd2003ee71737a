package mirror

import (
	"slices"

	"github.com/orchrun/orch/jobs"
)

// Allowlist is ORCH_ALLOWED_USERS: the Slack users who may start runs and answer. Empty, it allows anyone in the
// channel.
type Allowlist []string

// Allows reports whether user may start runs and answer.
func (l Allowlist) Allows(user string) bool {
	return len(l) == 0 || slices.Contains(l, user)
}

// MayAnswer reports whether user may see and answer run r's questions away from its thread (the Home, /orch questions
// in channel; "" for none). Someone in the list may answer every run's. Without a list, which lets anyone answer in
// the channels they are in, a person sees only the questions of the runs they started and, in a channel, of the runs
// started there: never a question of a channel they may not be in.
func (l Allowlist) MayAnswer(user, channel string, r *jobs.Run) bool {
	switch {
	case !l.Allows(user):
		return false
	case len(l) > 0:
		return true
	}
	return r.Origin.User == user || channel != "" && r.Origin.Channel == channel
}
