package mirror

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/jobs"
)

// QuietHours is a daily span in which orch sends no nudges, from From to To after midnight in Loc (a span past
// midnight, 22:00-08:00, wraps). The zero QuietHours is never quiet.
type QuietHours struct {
	From, To time.Duration
	Loc      *time.Location
}

// ParseQuietHours reads "HH:MM-HH:MM", optionally followed by an IANA time zone ("22:00-08:00 Europe/Berlin"); without
// one the times are in loc. "" and "off" are no quiet hours.
func ParseQuietHours(s string, loc *time.Location) (QuietHours, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return QuietHours{}, nil
	}
	span, zone, _ := strings.Cut(s, " ")
	if zone = strings.TrimSpace(zone); zone != "" {
		l, err := time.LoadLocation(zone)
		if err != nil {
			return QuietHours{}, fmt.Errorf("%q: unknown time zone %q (want an IANA name such as Europe/Berlin)", s, zone)
		}
		loc = l
	}
	from, to, ok := strings.Cut(span, "-")
	f, ferr := clockTime(from)
	t, terr := clockTime(to)
	if !ok || ferr != nil || terr != nil || f == t {
		return QuietHours{}, fmt.Errorf("%q: want HH:MM-HH:MM with two different times, e.g. 22:00-08:00", s)
	}
	if loc == nil {
		loc = time.Local
	}
	return QuietHours{From: f, To: t, Loc: loc}, nil
}

// clockTime reads "HH:MM" as the time since midnight.
func clockTime(s string) (time.Duration, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, herr := strconv.Atoi(h)
	mm, merr := strconv.Atoi(m)
	if !ok || herr != nil || merr != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || len(m) != 2 {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute, nil
}

// Quiet reports whether t falls in the quiet hours.
func (q QuietHours) Quiet(t time.Time) bool {
	if q.From == q.To {
		return false
	}
	loc := q.Loc
	if loc == nil {
		loc = time.Local
	}
	t = t.In(loc)
	since := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second
	if q.From < q.To {
		return since >= q.From && since < q.To
	}
	return since >= q.From || since < q.To
}

func (q QuietHours) String() string {
	if q.From == q.To {
		return "off"
	}
	clock := func(d time.Duration) string { return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60) }
	return clock(q.From) + "-" + clock(q.To) + " " + q.Loc.String()
}

// nudge reminds people of a question left unanswered: every Config.NudgeAfter it is announced again in the run's
// thread and sent to whoever started the run as a direct message, outside the quiet hours, until it is answered.
// A bot that was down for several intervals sends one nudge, not one per interval missed.
func (p *poster) nudge(ctx context.Context, run *jobs.Run, st *runState) error {
	every := p.cfg.NudgeAfter
	e := run.OpenEscalation()
	if every <= 0 || e == nil || run.Status.Terminal() || st.Esc[e.ID] == "" || st.RootTS == "" {
		return nil
	}
	now := p.cfg.Now()
	sent := st.Nudges[e.ID]
	waited := now.Sub(e.CreatedAt)
	if waited < time.Duration(sent+1)*every || p.cfg.QuietHours.Quiet(now) {
		return nil
	}
	link := p.ws.link(st.Channel, st.Esc[e.ID])
	if link != "" {
		link += "?thread_ts=" + st.RootTS + "&cid=" + st.Channel
	}
	msg, dm := blocks.Nudges(run, e, waited, link)
	if _, err := p.post(ctx, st.Channel, st.RootTS, msg); err != nil {
		return fmt.Errorf("re-announcing escalation %s: %w", e.ID, err)
	}
	// Counted as the intervals that have passed: the next nudge is one interval from now, whatever was missed.
	if err := p.save(ctx, run.ID, fieldNudgePrefix+e.ID, strconv.Itoa(int(waited/every))); err != nil {
		return err
	}
	st.Nudges[e.ID] = int(waited / every)
	if o := run.Origin; o.Kind == "slack" && blocks.IsUserID(o.User) {
		// A direct message: Slack takes the user's id as the channel of the app's conversation with them.
		if _, err := p.post(ctx, o.User, "", dm); err != nil {
			return fmt.Errorf("sending %s a reminder: %w", o.User, err)
		}
	}
	return nil
}
