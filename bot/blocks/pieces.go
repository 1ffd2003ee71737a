package blocks

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// slackUserID matches a Slack user id, which Slack renders as a mention in <@…>.
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// IsUserID reports whether s is a Slack user's id: one a message can mention, and a direct message can go to.
func IsUserID(s string) bool { return slackUserID.MatchString(s) }

// userRef names who answered: a mention for a Slack user, else the name as plain text.
func userRef(by, via string) string {
	switch {
	case by == "":
		return "someone"
	case via == "slack" && slackUserID.MatchString(by):
		return "<@" + by + ">"
	}
	return escapeCut(by, 100, false)
}

// viaText says where an answer came from, in the words every surface uses (jobs.ViaText).
func viaText(via string) string { return escapeCut(jobs.ViaText(via), maxLine, false) }

// startedBy names who started a run.
func startedBy(o jobs.Origin) string {
	switch {
	case o.Kind == "slack" && slackUserID.MatchString(o.User):
		return "<@" + o.User + ">"
	case o.User == "":
		return "someone (" + escapeCut(o.Kind, 20, false) + ")"
	case o.Kind == "cli":
		return escapeCut(o.User, 100, false) + " (terminal)"
	}
	return escapeCut(o.User, 100, false)
}

// runStatusLine is the run's overall status, one line.
func runStatusLine(r *jobs.Run) string {
	elapsed := HumanDuration(runElapsed(r))
	usd, _, _ := r.Cost()
	reason := ""
	if strings.TrimSpace(r.Reason) != "" {
		reason = ": " + escapeCut(singleLine(r.Reason), 500, false)
	}
	switch r.Status {
	case jobs.RunQueued:
		return ":inbox_tray: *Queued*: waiting for a worker"
	case jobs.RunRunning:
		if t := r.Current(); t != nil {
			return fmt.Sprintf(":hourglass_flowing_sand: *Running*: %s (%d of %d)",
				escapeCut(taskLabel(r, t.ID), maxLine, false), r.Cursor+1, len(r.Tasks))
		}
		return ":hourglass_flowing_sand: *Running*"
	case jobs.RunParked:
		if e := r.OpenEscalation(); e != nil {
			return fmt.Sprintf(":raising_hand: *Waiting for a human*: %s (answer in the thread)",
				escapeCut(taskLabel(r, e.TaskID), maxLine, false))
		}
		return ":raising_hand: *Waiting for a human* (answer in the thread)"
	case jobs.RunPaused:
		return fmt.Sprintf(":pause_button: *Paused*%s · resume with: %s", reason, escapeCut("orch resume "+r.ID, maxLine, false))
	case jobs.RunCompleted:
		return fmt.Sprintf(":white_check_mark: *Completed* in %s · %s", elapsed, formatUSD(usd))
	case jobs.RunFailed:
		return fmt.Sprintf(":x: *Failed* after %s%s", elapsed, reason)
	case jobs.RunAborted:
		return fmt.Sprintf(":octagonal_sign: *Aborted* after %s%s", elapsed, reason)
	}
	return "*" + escapeCut(string(r.Status), maxLine, false) + "*"
}

// fallbackStatus is the run's status in a few plain words.
func fallbackStatus(r *jobs.Run) string {
	switch r.Status {
	case jobs.RunRunning:
		if t := r.Current(); t != nil {
			return fmt.Sprintf("running task %d of %d", r.Cursor+1, len(r.Tasks))
		}
	case jobs.RunParked:
		return "waiting for a human"
	case jobs.RunFailed, jobs.RunAborted, jobs.RunPaused:
		if r.Reason != "" {
			return string(r.Status) + ": " + safetext.HeadLine(r.Reason)
		}
	}
	return string(r.Status)
}

func taskLine(t *jobs.Task) string {
	l := fmt.Sprintf("%s *%s* %s", taskEmoji(t.Status), escapeCut(t.ID, 40, false), escapeCut(singleLine(t.Title), 150, false))
	switch t.Status {
	case jobs.TaskForced:
		l += " _(forced)_"
	case jobs.TaskRunning, jobs.TaskWaiting:
		if t.Started > 1 {
			l += fmt.Sprintf(" _(attempt %d)_", t.Started)
		}
		if t.Status == jobs.TaskWaiting {
			l += " _waiting for a human_"
		}
	}
	return l
}

func taskEmoji(s jobs.TaskStatus) string {
	switch s {
	case jobs.TaskPending:
		return ":white_circle:"
	case jobs.TaskRunning:
		return ":hourglass_flowing_sand:"
	case jobs.TaskWaiting:
		return ":raising_hand:"
	case jobs.TaskCompleted:
		return ":white_check_mark:"
	case jobs.TaskForced:
		return ":heavy_check_mark:"
	case jobs.TaskFailed:
		return ":x:"
	}
	return ":grey_question:"
}

// PlanTitle is the plan's title, else its file name.
func PlanTitle(r *jobs.Run) string {
	if t := singleLine(r.PlanTitle); t != "" {
		return t
	}
	if strings.TrimSpace(r.PlanPath) != "" {
		return path.Base(r.PlanPath)
	}
	return "Run " + r.ID
}

// taskLabel is "Task 1.1: Implement caching" (raw text, not escaped).
func taskLabel(r *jobs.Run, id string) string {
	if t := r.Task(id); t != nil && strings.TrimSpace(t.Title) != "" {
		return "Task " + id + ": " + singleLine(t.Title)
	}
	return "Task " + id
}

func costLine(r *jobs.Run, what string) string {
	usd, _, _ := r.Cost()
	line := fmt.Sprintf("%s: %s · %s · %s", what, formatUSD(usd), tokensText(r), r.Tally().String())
	if b := r.BudgetText(r.UpdatedAt); b != "" { // as of the run's last change: blocks read no clock
		line += " · budget: " + b
	}
	return line
}

func tokensText(r *jobs.Run) string {
	_, in, out := r.Cost()
	return fmt.Sprintf("%s tokens in, %s out", groupDigits(in), groupDigits(out))
}

// eventLine is one event as a short mrkdwn line, from its description: its mark's emoji, its text (a person as a
// mention where they are a Slack user) and its detail. "" for the engine's quiet bookkeeping.
func eventLine(e jobs.Event) string {
	d := e.Describe()
	if d.Quiet {
		return ""
	}
	var b strings.Builder
	if icon := markEmoji[d.Mark]; icon != "" {
		b.WriteString(icon + " ")
	}
	for _, sp := range d.Text {
		if !sp.Person {
			b.WriteString(escapeCut(sp.Text, maxEventText, false))
			continue
		}
		via := sp.Via
		if via == "" { // who aborted or forced: a Slack user when their id says so
			via = "slack"
		}
		b.WriteString(userRef(sp.Text, via))
	}
	if d.Detail != "" {
		b.WriteString(" — " + escapeCut(d.Detail, 150, false))
	}
	return b.String()
}

// maxEventText bounds each piece of an event's text; a description keeps its own free text far shorter.
const maxEventText = 400

// markEmoji is the icon of each kind of moment.
var markEmoji = map[jobs.Mark]string{
	jobs.MarkStart:    ":arrow_right:",
	jobs.MarkWork:     ":hammer_and_wrench:",
	jobs.MarkDone:     ":white_check_mark:",
	jobs.MarkFailed:   ":x:",
	jobs.MarkForced:   ":heavy_check_mark:",
	jobs.MarkRetry:    ":repeat:",
	jobs.MarkLoop:     ":warning:",
	jobs.MarkAsk:      ":raising_hand:",
	jobs.MarkAnswer:   ":speech_balloon:",
	jobs.MarkResume:   ":arrow_forward:",
	jobs.MarkPause:    ":pause_button:",
	jobs.MarkAbort:    ":octagonal_sign:",
	jobs.MarkBroken:   ":boom:",
	jobs.MarkTimeout:  ":alarm_clock:",
	jobs.MarkRoute:    ":twisted_rightwards_arrows:",
	jobs.MarkBack:     ":leftwards_arrow_with_hook:",
	jobs.MarkPush:     ":arrow_up:",
	jobs.MarkWait:     ":hourglass_flowing_sand:",
	jobs.MarkFallback: ":brain:",
}

// eventTime renders in each reader's own time zone; the text after "|" is what clients that cannot show it print.
func eventTime(t time.Time) string {
	if t.IsZero() {
		return "·"
	}
	return fmt.Sprintf("<!date^%d^{time_secs}|%s UTC>", t.Unix(), t.UTC().Format("15:04:05"))
}

// runElapsed is how long a run lasted, or has lasted as of its last change.
func runElapsed(r *jobs.Run) time.Duration {
	switch {
	case !r.EndedAt.IsZero():
		return r.Duration(r.EndedAt)
	case !r.UpdatedAt.IsZero():
		return r.Duration(r.UpdatedAt)
	}
	return 0
}

// HumanDuration is a duration in its two largest units: "45s", "2m 5s", "1h 3m", "2d 4h".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	days, hours, mins, secs := s/86400, s/3600%24, s/60%60, s%60
	two := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return fmt.Sprintf("%d%s", a, ua)
		}
		return fmt.Sprintf("%d%s %d%s", a, ua, b, ub)
	}
	switch {
	case days > 0:
		return two(days, "d", hours, "h")
	case hours > 0:
		return two(hours, "h", mins, "m")
	case mins > 0:
		return two(mins, "m", secs, "s")
	}
	return fmt.Sprintf("%ds", secs)
}

func formatUSD(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

// groupDigits writes n with thousands separators: 12,345.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
