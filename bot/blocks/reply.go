package blocks

import (
	"fmt"
	"unicode/utf8"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// The replies to slash commands and requests: what a person is told at once (an ack) or a moment later.

// HelpText answers /orch help (and a command orch does not know): every command, one line each.
const HelpText = "*orch* runs a coding agent through a plan and asks here when it needs you.\n" +
	"• `/orch run PLAN [--agent NAME] [--sim-scenario FILE]` start a run (PLAN is a path inside the workspace)\n" +
	"• `/orch do TEXT` ask the agent in your own words; it works on a branch of its own\n" +
	"• `/orch status [RUN_ID]` how a run is doing (default: the latest)\n" +
	"• `/orch history` the latest runs started in this channel, with links to their threads\n" +
	"• `/orch costs [RUN_ID]` what a run cost, per task; without RUN_ID, this channel's latest runs and their total\n" +
	"• `/orch questions` the questions waiting for your answer, oldest first\n" +
	"• `/orch logs RUN_ID` a run's latest events\n" +
	"• `/orch abort RUN_ID` stop a run\n" +
	"• `/orch help` this message\n" +
	"Questions come as a message with a button per option; a reply in the run's thread answers in your own words."

// StartingReply acks `/orch run` of plan (its path in the workspace).
func StartingReply(plan string) string {
	return fmt.Sprintf("Starting a run of %s… its thread appears in this channel.", Echo(plan))
}

// DoingReply acks `/orch do` of the words text.
func DoingReply(text string) string {
	return fmt.Sprintf("On it: “%s”. Its thread appears in this channel.", escapeCut(safetext.HeadLine(redactHead(text, 80)), 80, false))
}

// AbortedReply says that `/orch abort` ended run r.
func AbortedReply(r *jobs.Run) string {
	return fmt.Sprintf("Run %s is %s.", inlineCode(r.ID, maxActionField), escapeCut(string(r.Status), 40, false))
}

// StillGoingReply answers a request made in the thread of run runID, which has not ended.
func StillGoingReply(runID string) string {
	return fmt.Sprintf("Run %s is still going in this thread: answer its question here, or ask again once it has ended to follow it up.",
		inlineCode(runID, maxActionField))
}

// Kept is what of a person's words is kept on record (an abort's reason, the request someone was refused): their
// redacted start, cut to n characters.
func Kept(raw string, n int) string { return cutPlain(redactHead(raw, n), n) }

// redactHead is the redacted start of s, for a text of which at most n bytes are kept: the patterns cost about a
// second a megabyte, and an ack must not wait on a megabyte nobody will see. A margin beyond n keeps a credential
// that starts within the kept part whole for the patterns to find.
func redactHead(s string, n int) string {
	if limit := n + redactMargin; len(s) > limit {
		for limit > 0 && !utf8.RuneStart(s[limit]) {
			limit--
		}
		s = s[:limit]
	}
	return safetext.Redact(s)
}

// redactMargin is how far past what is kept redactHead reads: longer than any credential the patterns know (a private
// key block is the longest, a few kilobytes).
const redactMargin = 16 << 10
