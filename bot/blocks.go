// Package bot is orch's Slack front end: it verifies and acks Slack's requests, starts runs from slash commands,
// renders runs and their questions as Block Kit, turns clicks and thread replies into resolutions, and keeps each
// run's thread up to date within Slack's limits.
package bot

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// Message is what the bot posts or updates: a fallback text (notifications, screen readers) and blocks.
type Message struct {
	Text   string
	Blocks []slack.Block
}

// Slack's limits on what a message holds. Lengths are counted as Slack's clients count them, in UTF-16 code units of
// the text as sent (an escaped "&" counts five): never less than what Slack counts.
const (
	maxBlocks          = 50
	maxSectionText     = 3000
	maxContextText     = 3000
	maxButtonText      = 75
	maxHeaderText      = 150
	maxContextElements = 10
	maxActionsElements = 25
	maxConfirmTitle    = 100
	maxConfirmText     = 300
	maxConfirmButton   = 30
	// maxFallbackText keeps the notification text short; the blocks carry the rest.
	maxFallbackText = 500
	// maxProgressEvents is how many recent events the progress view shows.
	maxProgressEvents = 10
	// maxTaskSections bounds the task list of the root message.
	maxTaskSections = 5
	maxLine         = 200 // one line of a list
	// maxRequestQuote bounds the quote of a request in words on its run's root message.
	maxRequestQuote = 1500
)

// RootMessage is the run's message in the channel: plan title and path, run id, who started it, the task list with
// each task's status, and the run's status. It is updated in place as the run moves, and at the end.
func RootMessage(r *jobs.Run) Message {
	title := planTitle(r)
	blocks := []slack.Block{headerBlock(cutPlain(title, maxHeaderText))}
	if r.Request != "" {
		// A request in words is quoted as asked, with who asked; a follow-up names the run it follows.
		run := fmt.Sprintf("*Run:* %s · asked by %s", inlineCode(r.ID, maxActionField), startedBy(r.Origin))
		if r.FollowUpOf != "" {
			run += " · follows up " + inlineCode(r.FollowUpOf, maxActionField)
		}
		blocks = append(blocks, sectionBlock(quoteText(r.Request, maxRequestQuote)), sectionBlock(run))
	} else {
		blocks = append(blocks, sectionBlock(fmt.Sprintf("*Plan:* %s\n*Run:* %s · started by %s",
			inlineCode(r.PlanPath, maxLine), inlineCode(r.ID, maxActionField), startedBy(r.Origin))))
	}
	blocks = append(blocks, sectionBlock(runStatusLine(r)))
	if n := len(r.FollowUps); n > 0 {
		ids := make([]string, 0, min(n, 5))
		for _, id := range r.FollowUps[max(0, n-5):] {
			ids = append(ids, inlineCode(id, maxActionField))
		}
		blocks = append(blocks, contextBlock("Followed up by "+strings.Join(ids, ", ")))
	}
	lines := make([]string, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		lines = append(lines, taskLine(t))
	}
	blocks = append(blocks, packLines(lines, maxTaskSections, func(n int) string {
		return fmt.Sprintf("_… and %s_", jobs.Count(n, "more task"))
	})...)
	blocks = append(blocks, contextBlock(costLine(r, "Cost")))
	text := fmt.Sprintf("Run %s: %s: %s", r.ID, title, fallbackStatus(r))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// ProgressMessage is the progress view in the run's thread, updated in place: the current task and attempt, the last
// few events as short lines, and the cost so far.
func ProgressMessage(r *jobs.Run, recent []jobs.Event) Message {
	now := "All tasks are done."
	fallback := fmt.Sprintf("Run %s: %s", r.ID, r.Status)
	if t := r.Current(); t != nil {
		label := taskLabel(r, t.ID)
		now = fmt.Sprintf("%s *%s*", taskEmoji(t.Status), escapeCut(label, maxLine, false))
		if a := jobs.AttemptText(t.Started, r.Options.MaxAttempts); a != "" {
			now += " · " + a
		}
		if t.Status == jobs.TaskWaiting {
			now += " · waiting for a human"
		}
		fallback = fmt.Sprintf("Run %s: %s (%s)", r.ID, label, t.Status)
	}
	if r.Status.Terminal() || r.Status == jobs.RunPaused {
		now = runStatusLine(r)
	}
	blocks := []slack.Block{sectionBlock(now)}
	lines := make([]string, 0, len(recent))
	for _, e := range recent {
		if l := eventLine(e); l != "" {
			lines = append(lines, eventTime(e.Time)+" "+l)
		}
	}
	if skipped := len(lines) - maxProgressEvents; skipped > 0 {
		lines = lines[skipped:]
	}
	if len(lines) == 0 {
		lines = append(lines, "_No events yet._")
	}
	blocks = append(blocks, sectionBlock(strings.Join(lines, "\n")))
	blocks = append(blocks, contextBlock(costLine(r, "Cost so far")))
	return newMessage(escapeCut(fallback, maxFallbackText, false), blocks)
}

// EscalationMessage is a question to a human in the run's thread: the task, the question, what triggered it, a button
// per option (the recommended one primary), Answer… (a form), Retry and Abort, and a hint that a thread reply gives
// free-text guidance.
// A security escalation offers no options: only Retry and Abort, and a hint to rotate the leaked credential.
func EscalationMessage(r *jobs.Run, e *jobs.Escalation) Message {
	label, suffix := taskLabel(r, e.TaskID), questionSuffix(e)
	blocks := escalationHead(r, e, label, suffix)
	var tail []slack.Block // after the option buttons

	answer := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: kindAnswer}
	retry := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: kindRetry}
	abort := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: kindAbort}
	clickable := checkActionValue(retry) == nil
	if clickable {
		// Answer… opens a form that takes any answer the question allows: an option from a list (however many
		// there are) or words.
		controls := []slack.BlockElement{button(answer, "Answer…", ""), button(retry, "Retry", "")}
		if e.Trigger == jobs.TriggerGate || e.Call {
			// A gate is answered with a choice, and so is a call the agent paused at (its session waits for that
			// answer): there is nothing to retry.
			controls = controls[:1]
		}
		controls = append(controls, button(abort, "Abort", slack.StyleDanger).WithConfirm(abortConfirm(r)))
		tail = append(tail, slack.NewActionBlock("orch_controls", controls...))
	}
	hint := "Or reply in this thread to give free-text guidance instead."
	switch e.Trigger {
	case jobs.TriggerSecurity:
		hint = ":rotating_light: A secret may have leaked: *rotate the credential* before you retry. " +
			"A reply in this thread gives free-text guidance."
	case jobs.TriggerGate:
		hint = "Or reply in this thread with a choice's key or label."
	case jobs.TriggerApproval:
		hint = "Or reply in this thread to deny the call with your reason, which the agent reads."
	case jobs.TriggerChat:
		hint = "Reply in this thread to answer the agent: each reply is one turn. *Done* or *Approve* ends the " +
			"conversation, *Reject* fails the task; to say why, choose Reject in *Answer…* and write the reason."
	default:
		if e.Call {
			hint = "Or reply in this thread with an answer of your own."
		}
	}
	tail = append(tail, contextBlock(hint))

	var options []slack.Block
	if e.Trigger != jobs.TriggerSecurity {
		room := maxBlocks - len(blocks) - len(tail)
		var list slack.Block
		options, list = optionBlocks(r, e, room, clickable)
		if list != nil {
			blocks = append(blocks, list)
		}
	}
	blocks = append(blocks, options...)
	blocks = append(blocks, tail...)
	text := fmt.Sprintf("%s%s: %s", label, suffix, safetext.HeadLine(e.Question))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// questionSuffix ends a question's header after the task's label: what the question is waiting for.
func questionSuffix(e *jobs.Escalation) string {
	switch e.Trigger {
	case jobs.TriggerGate:
		return " — your call"
	case jobs.TriggerChat:
		return " — the agent replied"
	}
	return " needs you"
}

// AnsweredMessage is an escalation once answered: the same question without buttons, and who answered what after how
// long. Slack users are named as mentions (<@U123>), anyone else as plain text.
func AnsweredMessage(r *jobs.Run, e *jobs.Escalation) Message {
	label := taskLabel(r, e.TaskID)
	res := e.Resolution
	if res == nil {
		blocks := escalationHead(r, e, label, " needs you")
		blocks = append(blocks, contextBlock("_No answer is recorded yet._"))
		return newMessage(escapeCut(label+" needs you", maxFallbackText, false), blocks)
	}
	blocks := escalationHead(r, e, label, " — answered")
	who := userRef(res.By, res.Via)
	after := "after " + humanDuration(res.At.Sub(e.CreatedAt))
	line, what := answerLine(e, res, who, after)
	blocks = append(blocks, sectionBlock(line))
	where := fmt.Sprintf("escalation %s · run %s", inlineCode(e.ID, maxActionField), inlineCode(r.ID, maxActionField))
	if res.Via != "" {
		where = "Answered " + viaText(res.Via) + " · " + where
	}
	blocks = append(blocks, contextBlock(where))
	text := fmt.Sprintf("%s: %s %s (%s)", escapeCut(label, maxLine, false), who,
		escapeCut(singleLine(what), maxLine, false), after)
	return newMessage(text, blocks)
}

// FinalMessage is the thread message when the run ends: the run id, `completed`, `failed` or `aborted`, how long it
// took, what it cost, and why it did not complete.
func FinalMessage(r *jobs.Run) Message {
	d := humanDuration(runElapsed(r))
	usd, _, _ := r.Cost()
	id, cost, word := inlineCode(r.ID, maxActionField), formatUSD(usd), string(r.Status)
	var head string
	switch r.Status {
	case jobs.RunCompleted:
		head = fmt.Sprintf(":white_check_mark: Run %s *completed* in %s · cost %s", id, d, cost)
	case jobs.RunFailed:
		head = fmt.Sprintf(":x: Run %s *failed* after %s · cost %s", id, d, cost)
	case jobs.RunAborted:
		head = fmt.Sprintf(":octagonal_sign: Run %s *aborted* after %s · cost %s", id, d, cost)
	default:
		head = fmt.Sprintf("Run %s is *%s* after %s · cost %s", id, escapeCut(word, maxLine, false), d, cost)
	}
	blocks := []slack.Block{sectionBlock(head)}
	text := fmt.Sprintf("Run %s %s after %s, cost %s", r.ID, word, d, cost)
	if r.Status == jobs.RunCompleted {
		text = fmt.Sprintf("Run %s %s in %s, cost %s", r.ID, word, d, cost)
	}
	if r.Status != jobs.RunCompleted && strings.TrimSpace(r.Reason) != "" {
		blocks = append(blocks, sectionBlock("*Reason:* "+escapeCut(r.Reason, maxSectionText-len("*Reason:* "), true)))
		text += ": " + safetext.HeadLine(r.Reason)
	}
	if line := workLine(r); line != "" {
		blocks = append(blocks, sectionBlock(line))
		if g := r.Git; g.Commits > 0 {
			text += fmt.Sprintf("; branch %s, %s", g.Branch, jobs.Count(g.Commits, "commit"))
		}
	}
	title := planTitle(r)
	blocks = append(blocks, contextBlock(fmt.Sprintf("%s · %s · %s", escapeCut(title, maxLine, false),
		r.Tally().String(), tokensText(r))))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// workLine says what the run left on its branch, with its pull request: "" for a run without a branch.
func workLine(r *jobs.Run) string {
	g := r.Git
	if g == nil {
		return ""
	}
	branch := inlineCode(g.Branch, maxLine)
	var line string
	if g.Commits == 0 {
		line = fmt.Sprintf(":twisted_rightwards_arrows: Branch %s: no changes from %s", branch, inlineCode(g.Base, maxLine))
	} else {
		line = fmt.Sprintf(":twisted_rightwards_arrows: Branch %s: %s on %s · %s", branch, jobs.Count(g.Commits, "commit"),
			inlineCode(g.Base, maxLine), diffstatText(g))
	}
	if g.Pushed != "" {
		line += " · pushed to " + inlineCode(g.Push, maxLine)
	}
	if u := g.PullRequest; strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		// Slack's link syntax: the URL with &, < and > escaped as in any text, and no | (it ends the URL).
		u = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "%7C", " ", "%20").Replace(u)
		line += fmt.Sprintf("\n:mag: <%s|Draft pull request>", u)
	}
	if g.Unfinished != "" {
		line += "\nWork left uncommitted is kept at " + inlineCode(g.Unfinished, maxLine)
	}
	return line
}

// diffstatText is git's diffstat in words: "3 files changed, +10 −2".
func diffstatText(g *jobs.Git) string {
	return fmt.Sprintf("%s changed, +%d −%d", jobs.Count(g.FilesChanged, "file"), g.Insertions, g.Deletions)
}

// PausedMessage says the run stopped because the brain was unavailable, why, and how to continue it.
func PausedMessage(r *jobs.Run) Message {
	reason := strings.TrimSpace(r.Reason)
	if reason == "" {
		reason = "the brain was unavailable"
	}
	resume := "orch resume " + r.ID
	head := fmt.Sprintf(":pause_button: Run %s is *paused*: %s", inlineCode(r.ID, maxActionField),
		escapeCut(reason, 2000, true))
	blocks := []slack.Block{
		// The command as plain words, the way the terminal prints it, so it reads (and copies) the same everywhere.
		sectionBlock(head + "\nresume with: " + escapeCut(resume, maxLine, false)),
		contextBlock("Nothing runs while it is paused; the agent's last output is kept and judged when the run resumes."),
	}
	text := fmt.Sprintf("Run %s paused: %s. resume with: %s", r.ID, safetext.HeadLine(reason), resume)
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// escalationHead is what a question and its answered form share: header, trigger line, question, recommendation
// (when it names no option) and the error.
func escalationHead(r *jobs.Run, e *jobs.Escalation, label, suffix string) []slack.Block {
	header := cutPlain(label, maxHeaderText-textLen(suffix)) + suffix
	blocks := []slack.Block{headerBlock(header), contextBlock(triggerLine(r, e))}
	q := strings.TrimSpace(e.Question)
	if q == "" {
		blocks = append(blocks, sectionBlock("_No question text._"))
	} else {
		blocks = append(blocks, sectionBlock(escapeCut(q, maxSectionText, true)))
	}
	if rec := strings.TrimSpace(e.Recommendation); rec != "" && !hasOption(e, rec) {
		const p = "*Recommendation:* "
		blocks = append(blocks, sectionBlock(p+escapeCut(rec, maxSectionText-len(p), true)))
	}
	if msg := strings.TrimSpace(e.Error); msg != "" {
		const p = "*Last error:*\n```\n"
		// A fence inside the error would end the code block early.
		msg = strings.ReplaceAll(msg, "```", "`\u200b``")
		blocks = append(blocks, sectionBlock(p+escapeCut(msg, 1500, true)+fenceClose))
	}
	return blocks
}

func hasOption(e *jobs.Escalation, key string) bool {
	for _, o := range e.Options {
		if o.Key == key {
			return true
		}
	}
	return false
}

// triggerLine says why the run needs a human: the trigger, the attempt, and the error similarity when known.
func triggerLine(r *jobs.Run, e *jobs.Escalation) string {
	parts := []string{"Trigger: *" + escapeCut(e.Trigger.Describe(e.Name), maxLine, false) + "*"}
	if a := jobs.AttemptText(e.Attempt, r.Options.MaxAttempts); a != "" {
		parts = append(parts, a)
	}
	if e.Similarity > 0 {
		parts = append(parts, fmt.Sprintf("error similarity %.0f%%", 100*e.Similarity))
	}
	parts = append(parts, "run "+inlineCode(r.ID, maxActionField))
	return strings.Join(parts, " · ")
}

// optionBlocks renders the options as buttons in actions blocks, in at most room blocks. Options that do not fit, or
// whose key cannot be a button, are named in a context line instead. When a button had to cut its label, list is a
// section with every label in full.
func optionBlocks(r *jobs.Run, e *jobs.Escalation, room int, clickable bool) (blocks []slack.Block, list slack.Block) {
	if len(e.Options) == 0 {
		return nil, nil
	}
	rec := recommendedKey(e)
	type keyed struct {
		key    string
		button slack.BlockElement
	}
	var buttons []keyed
	var left []string // keys of the options that are no button
	seen := map[string]bool{}
	cut := false
	for _, o := range e.Options {
		if seen[o.Key] {
			continue // one answer, one button
		}
		seen[o.Key] = true
		v := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: kindChoose, Key: o.Key}
		if !clickable || checkActionValue(v) != nil {
			left = append(left, o.Key)
			continue
		}
		text, wasCut := optionText(e, o, o.Key == rec)
		cut = cut || wasCut
		style := slack.StyleDefault
		if o.Key == rec {
			style = slack.StylePrimary
		}
		buttons = append(buttons, keyed{o.Key, button(v, text, style)})
	}
	if cut {
		lines := make([]string, 0, len(e.Options))
		for _, o := range e.Options {
			l := "*" + escapeCut(o.Key, maxActionField, false) + ")* " + escapeCut(singleLine(o.Label), 600, false)
			if o.Key == rec {
				l += " _(recommended)_"
			}
			lines = append(lines, l)
		}
		list = packLines(lines, 1, func(n int) string { return fmt.Sprintf("_… and %s_", jobs.Count(n, "more option")) })[0]
		room--
	}
	need := (len(buttons) + maxActionsElements - 1) / maxActionsElements
	if len(left) > 0 || need > room {
		room-- // for the line that names the rest
	}
	if need > room {
		shown := max(room, 0) * maxActionsElements
		for _, b := range buttons[shown:] {
			left = append(left, b.key)
		}
		buttons = buttons[:shown]
	}
	for i := 0; i < len(buttons); i += maxActionsElements {
		var row []slack.BlockElement
		for _, b := range buttons[i:min(i+maxActionsElements, len(buttons))] {
			row = append(row, b.button)
		}
		blocks = append(blocks, slack.NewActionBlock("orch_options_"+strconv.Itoa(i/maxActionsElements+1), row...))
	}
	if len(left) > 0 {
		keys := make([]string, len(left))
		for i, k := range left {
			keys[i] = escapeCut(k, maxActionField, false)
		}
		names := strings.Join(keys, ", ")
		if textLen(names) > 1500 {
			names = clampComposed(names, 1500)
		}
		how := "reply in this thread"
		if clickable {
			how = "choose one with Answer…, " + how
		}
		blocks = append(blocks, contextBlock(fmt.Sprintf("%s not shown as buttons (%s): %s, or run %s from a terminal.",
			jobs.Count(len(left), "option"), names, how, inlineCode("orch escalation resolve "+r.ID+" --choose KEY", maxLine))))
	}
	return blocks, list
}

// recommendedKey is the key of the recommended option, or "".
func recommendedKey(e *jobs.Escalation) string {
	if e.Recommendation == "" {
		return ""
	}
	if hasOption(e, e.Recommendation) {
		return e.Recommendation
	}
	if o, ok := e.OptionByKey(e.Recommendation); ok {
		return o.Key
	}
	return ""
}

// optionText is a button's text: "A) Redis", the label cut to fit, "(recommended)" kept whole. The options of a call
// the agent paused at are its own (Claude's question's labels, Allow once, Deny): their buttons show the label alone.
func optionText(e *jobs.Escalation, o jobs.Option, recommended bool) (text string, cut bool) {
	prefix, suffix := o.Key+")", ""
	switch {
	case e.Trigger == jobs.TriggerGate:
		prefix = "[" + o.Key + "]" // as the pipeline's edge labels write it
	case e.Trigger == jobs.TriggerChat:
		return o.Label, false // Done, Approve, Reject
	case e.Call && strings.TrimSpace(o.Label) != "":
		prefix = ""
	}
	label := strings.Join(strings.Fields(o.Label), " ")
	if recommended && !strings.Contains(strings.ToLower(label), "recommended") {
		suffix = " (recommended)"
	}
	if label != "" && prefix != "" {
		prefix += " "
	}
	room := maxButtonText - textLen(prefix) - textLen(suffix)
	if room < 8 { // a key that long: cut the whole text instead
		whole := prefix + label + suffix
		return cutPlain(whole, maxButtonText), textLen(whole) > maxButtonText
	}
	short := cutPlain(label, room)
	return prefix + short + suffix, short != label
}

func button(v ActionValue, text string, style slack.Style) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(v.actionID(), v.Encode(), plainText(cutPlain(text, maxButtonText))).WithStyle(style)
}

func abortConfirm(r *jobs.Run) *slack.ConfirmationBlockObject {
	text := cutPlain(fmt.Sprintf("Run %s stops here, with its task unfinished. This cannot be undone.", r.ID), maxConfirmText)
	c := slack.NewConfirmationBlockObject(plainText(cutPlain("Abort this run?", maxConfirmTitle)), plainText(text),
		plainText(cutPlain("Abort run", maxConfirmButton)), plainText(cutPlain("Keep it", maxConfirmButton)))
	return c.WithStyle(slack.StyleDanger)
}

// answerLine says who answered what after how long (mrkdwn), and what in plain words for the fallback text.
func answerLine(e *jobs.Escalation, res *jobs.Resolution, who, after string) (line, what string) {
	const room = maxSectionText - 400 // for the words around the human's text
	switch res.Type {
	case jobs.ResolveChoose:
		choice := res.Key
		if o, ok := e.OptionByKey(res.Key); ok {
			switch e.Trigger {
			case jobs.TriggerGate:
				choice = "[" + o.Key + "] " + o.Label
			case jobs.TriggerChat:
				choice = o.Label
			default:
				choice = o.Key + ") " + o.Label
			}
		}
		return fmt.Sprintf(":white_check_mark: %s chose *%s* %s", who, escapeCut(singleLine(choice), 600, false), after),
			"chose " + choice
	case jobs.ResolveAnswer:
		if e.Trigger == jobs.TriggerChat {
			return fmt.Sprintf(":speech_balloon: %s replied %s:\n%s", who, after, escapeCut(res.Text, room, true)),
				"replied: " + safetext.HeadLine(res.Text)
		}
		return fmt.Sprintf(":speech_balloon: %s answered %s:\n%s", who, after, escapeCut(res.Text, room, true)),
			"answered: " + safetext.HeadLine(res.Text)
	case jobs.ResolveResume:
		return fmt.Sprintf(":arrow_forward: %s resumed the run %s", who, after), "resumed the run"
	case jobs.ResolveRetry:
		return fmt.Sprintf(":repeat: %s asked for one more attempt %s", who, after), "asked for one more attempt"
	case jobs.ResolveAbort:
		line = fmt.Sprintf(":octagonal_sign: %s aborted the run %s", who, after)
		if strings.TrimSpace(res.Reason) != "" {
			line += ": " + escapeCut(res.Reason, room, true)
		}
		return line, "aborted the run: " + safetext.HeadLine(res.Reason)
	case jobs.ResolveForce:
		return fmt.Sprintf(":warning: %s forced the task to continue (risk acknowledged) %s", who, after),
			"forced the task to continue (risk acknowledged)"
	case jobs.ResolveDecline:
		line = fmt.Sprintf(":no_entry_sign: %s declined %s", who, after)
		if strings.TrimSpace(res.Reason) != "" {
			line += ": " + escapeCut(res.Reason, room, true)
		}
		return line, "declined: " + safetext.HeadLine(res.Reason)
	}
	kind := escapeCut(string(res.Type), maxLine, false)
	return fmt.Sprintf("%s answered (%s) %s", who, kind, after), string(res.Type)
}

// slackUserID matches a Slack user id, which Slack renders as a mention in <@…>.
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

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

// viaText says where an answer came from.
func viaText(via string) string {
	switch via {
	case "slack":
		return "in Slack"
	case "console", "cli":
		return "from the terminal (" + via + ")"
	case "answers-file":
		return "from an answers file"
	case "auto-approve":
		return "by auto-approval"
	case "timeout":
		return "on timeout"
	}
	return "via " + escapeCut(via, maxLine, false)
}

// quoteText is raw text as a mrkdwn quote, escaped and cut to at most n characters of it.
func quoteText(raw string, n int) string {
	return quoteLines(escapeCut(strings.TrimSpace(raw), n, true))
}

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
	elapsed := humanDuration(runElapsed(r))
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

// planTitle is the plan's title, else its file name.
func planTitle(r *jobs.Run) string {
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
	return fmt.Sprintf("%s: %s · %s · %s", what, formatUSD(usd), tokensText(r), r.Tally().String())
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

// humanDuration is a duration in its two largest units: "45s", "2m 5s", "1h 3m", "2d 4h".
func humanDuration(d time.Duration) string {
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

// --- Block Kit helpers: every text passes through here, so every limit holds in one place. ---

func newMessage(text string, blocks []slack.Block) Message {
	if len(blocks) > maxBlocks { // the renderers budget their blocks; this only guards against a mistake
		left := len(blocks) - (maxBlocks - 1)
		blocks = append(blocks[:maxBlocks-1:maxBlocks-1], contextBlock(fmt.Sprintf("_… %s not shown_", jobs.Count(left, "more block"))))
	}
	if strings.TrimSpace(text) == "" {
		text = "orch"
	}
	return Message{Text: clampComposed(text, maxFallbackText), Blocks: blocks}
}

func headerBlock(text string) *slack.HeaderBlock {
	if strings.TrimSpace(text) == "" {
		text = "orch"
	}
	return slack.NewHeaderBlock(plainText(cutPlain(text, maxHeaderText)))
}

// sectionBlock wraps mrkdwn that is already escaped.
func sectionBlock(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwnText(clampComposed(text, maxSectionText)), nil, nil)
}

// contextBlock holds mrkdwn elements that are already escaped; beyond Slack's ten, the rest join the tenth.
func contextBlock(elems ...string) *slack.ContextBlock {
	var kept []string
	for _, s := range elems {
		if strings.TrimSpace(s) != "" {
			kept = append(kept, s)
		}
	}
	if len(kept) > maxContextElements {
		kept = append(kept[:maxContextElements-1], strings.Join(kept[maxContextElements-1:], " · "))
	}
	if len(kept) == 0 {
		kept = []string{" "}
	}
	mixed := make([]slack.MixedElement, len(kept))
	for i, s := range kept {
		mixed[i] = mrkdwnText(clampComposed(s, maxContextText))
	}
	return slack.NewContextBlock("", mixed...)
}

// mrkdwnText is verbatim mrkdwn: Slack turns no bare URL, channel name or @mention in it into a link or a ping, so
// only what orch writes as <…> is one.
func mrkdwnText(s string) *slack.TextBlockObject {
	return &slack.TextBlockObject{Type: slack.MarkdownType, Text: s, Verbatim: true}
}

// plainText is plain_text, which Slack never parses for links or mentions.
func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

// packLines joins lines into at most maxSections sections of at most maxSectionText each, cutting only between lines;
// the lines that do not fit are counted by more(n) at the end of the last one.
func packLines(lines []string, maxSections int, more func(n int) string) []slack.Block {
	var sections [][]string
	var cur []string
	size := 0
	for _, l := range lines {
		l = clampComposed(l, maxSectionText/2)
		if size+textLen(l)+1 > maxSectionText && len(cur) > 0 {
			sections = append(sections, cur)
			cur, size = nil, 0
		}
		cur = append(cur, l)
		size += textLen(l) + 1
	}
	if len(cur) > 0 {
		sections = append(sections, cur)
	}
	if len(sections) > maxSections {
		left := 0
		for _, sec := range sections[maxSections:] {
			left += len(sec)
		}
		last := sections[maxSections-1]
		size := textLen(strings.Join(last, "\n"))
		for len(last) > 0 && size+1+textLen(more(left)) > maxSectionText {
			size -= textLen(last[len(last)-1]) + 1
			last = last[:len(last)-1]
			left++
		}
		sections = append(sections[:maxSections-1], append(last, more(left)))
	}
	if len(sections) == 0 {
		sections = [][]string{{"_None._"}}
	}
	blocks := make([]slack.Block, len(sections))
	for i, sec := range sections {
		blocks[i] = sectionBlock(strings.Join(sec, "\n"))
	}
	return blocks
}

// inlineCode is s as inline code, escaped, with no backtick to end it early.
func inlineCode(s string, n int) string {
	return "`" + escapeCut(strings.ReplaceAll(singleLine(s), "`", "'"), n, false) + "`"
}

func singleLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// --- Text: escaping and cutting. ---

// textLen is a text's length as Slack's limits count it, conservatively: UTF-16 code units.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}

// sanitize makes s valid UTF-8 without control characters other than newline and tab.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

func escapedRune(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	}
	return string(r)
}

// escapeCut escapes untrusted text for mrkdwn (&, <, >: an agent cannot write a mention, a link or a special command
// like <!channel>) and cuts it, on a rune boundary, to at most n characters as sent. A long cut ends with a visible
// "… [cut: N more characters]" line (N counts the characters left out, before escaping) and closes a code fence the cut
// left open; a short one ends with "…".
func escapeCut(raw string, n int, long bool) string {
	return cutText(sanitize(raw), n, long, escapedRune)
}

// cutPlain cuts text for a plain_text object (no escaping) to at most n characters, ending with "…" when cut.
func cutPlain(raw string, n int) string {
	return cutText(sanitize(raw), n, false, func(r rune) string { return string(r) })
}

const fenceClose = "\n```"

func cutNote(rest int) string { return fmt.Sprintf("\n… [cut: %d more characters]", rest) }

func cutText(s string, n int, long bool, conv func(rune) string) string {
	var b strings.Builder
	size := 0
	for _, r := range s {
		c := conv(r)
		size += textLen(c)
		b.WriteString(c)
	}
	if size <= n {
		return b.String()
	}
	total := utf8.RuneCountInString(s)
	reserve := textLen("…")
	if long {
		reserve = textLen(cutNote(total)) + textLen(fenceClose) // the count never has more digits than total
	}
	budget := max(n-reserve, 0)
	b.Reset()
	size, kept := 0, 0
	lineEnd, keptAtLineEnd := -1, 0 // the last line break kept, to end a long cut on a whole line
	for _, r := range s {
		c := conv(r)
		if size+textLen(c) > budget {
			break
		}
		if r == '\n' {
			lineEnd, keptAtLineEnd = b.Len(), kept
		}
		b.WriteString(c)
		size += textLen(c)
		kept++
	}
	out := b.String()
	if !long {
		return strings.TrimRightFunc(out, unicode.IsSpace) + "…"
	}
	if lineEnd >= 0 && lineEnd >= len(out)*9/10 {
		out, kept = out[:lineEnd], keptAtLineEnd
	}
	if strings.Count(out, "```")%2 == 1 {
		out += fenceClose
	}
	return out + cutNote(total-kept)
}

// clampComposed cuts mrkdwn that orch composed (escaped parts, mentions, dates) to at most n characters without
// splitting an entity or a <…> span. The renderers bound each part so this rarely cuts; it keeps the limit a promise.
func clampComposed(s string, n int) string {
	if textLen(s) <= n {
		return s
	}
	budget := n - textLen("…")
	var b strings.Builder
	size := 0
	for _, r := range s {
		if size+textLen(string(r)) > budget {
			break
		}
		b.WriteRune(r)
		size += textLen(string(r))
	}
	out := b.String()
	if i := strings.LastIndexByte(out, '<'); i > strings.LastIndexByte(out, '>') {
		out = out[:i]
	}
	if i := strings.LastIndexByte(out, '&'); i >= 0 && !strings.Contains(out[i:], ";") {
		out = out[:i]
	}
	if strings.Count(out, "```")%2 == 1 && textLen(out)+textLen(fenceClose) <= budget {
		out += fenceClose
	}
	return out + "…"
}
