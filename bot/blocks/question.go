package blocks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// EscalationMessage is a question to a human in the run's thread: the task, the question, what triggered it, what the
// agent did so far (the diffstat's summary and the first files), a button per option (the recommended one primary),
// Answer… (a form), Retry where the question has it (escalation.AnswersOf: a task that failed; not an agent's question,
// a gate or a call the agent paused at, which are answered, not retried), Abort, a link to the run's page in the web
// view when there is one (page, "" for none), and a hint that a thread reply gives free-text guidance.
// A security escalation offers no options: only Retry and Abort, and a hint to rotate the leaked credential.
func EscalationMessage(r *jobs.Run, e *jobs.Escalation, page string) Message {
	label, suffix := taskLabel(r, e.TaskID), questionSuffix(e)
	blocks := escalationHead(r, e, label, suffix)
	var tail []slack.Block // after the option buttons

	answers := escalation.AnswersOf(e)
	answer := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindAnswer}
	retry := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindRetry}
	abort := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindAbort}
	clickable := checkActionValue(retry) == nil
	var controls []slack.BlockElement
	if clickable {
		// Answer… opens a form that takes any answer the question allows: an option from a list (however many
		// there are) or words.
		controls = append(controls, button(answer, "Answer…", ""))
		if answers.Retry {
			controls = append(controls, button(retry, "Retry", ""))
		}
		controls = append(controls, button(abort, "Abort", slack.StyleDanger).WithConfirm(abortConfirm(r)))
	}
	if b := pageButton(page); b != nil {
		controls = append(controls, b)
	}
	if len(controls) > 0 {
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
	if len(answers.Options) > 0 {
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
	after := "after " + HumanDuration(res.At.Sub(e.CreatedAt))
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
	if work := workExcerpt(e); work != "" {
		blocks = append(blocks, contextBlock(work))
	}
	return blocks
}

// Bounds of the excerpt of what the agent did that a question shows: its whole diff is on the run's branch and page.
const (
	maxExcerptFiles = 5  // files named
	maxExcerptName  = 80 // characters of a file's name
)

// workExcerpt is what the agent did so far, in a line: the summary of git's diffstat ("3 files changed, 10
// insertions(+), 2 deletions(-)") and the first few files changed, each as inline code (a file's name, the agent's to
// choose, can neither format, mention nor link), the rest counted; "" when the question carries neither.
func workExcerpt(e *jobs.Escalation) string {
	var parts []string
	if sum := diffstatSummary(e.Diff); sum != "" {
		parts = append(parts, escapeCut(sum, maxLine, false))
	}
	var names []string
	more := 0
	for _, f := range e.Files {
		if n, ok := moreFiles(f); ok {
			more += n
			continue
		}
		if strings.TrimSpace(f) == "" {
			continue
		}
		if len(names) == maxExcerptFiles {
			more++
			continue
		}
		names = append(names, fileChange(f))
	}
	if more > 0 {
		names = append(names, "and "+jobs.Count(more, "more file"))
	}
	if len(names) > 0 {
		parts = append(parts, strings.Join(names, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return ":pencil2: *So far:* " + strings.Join(parts, " · ")
}

// diffstatSummary is the summary line of git diff --stat output ("3 files changed, 10 insertions(+)…"), "" for none.
func diffstatSummary(stat string) string {
	lines := strings.Split(stat, "\n")
	for _, l := range slices.Backward(lines) {
		if l = strings.TrimSpace(l); diffstatLine.MatchString(l) {
			return l
		}
	}
	return ""
}

var diffstatLine = regexp.MustCompile(`^\d+ files? changed(, \d+ insertions?\(\+\))?(, \d+ deletions?\(-\))?$`)

// moreFiles reads the entry that counts the files an escalation left out ("… and 12 more"), as escalation.Open writes it.
func moreFiles(f string) (int, bool) {
	m := moreFilesEntry.FindStringSubmatch(f)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

var moreFilesEntry = regexp.MustCompile(`^… and (\d+) more$`)

// fileChange is one file the agent changed, as git's --name-status gives it ("M\tpath"): its name as inline code, and
// what happened to it in a word.
func fileChange(f string) string {
	status, name, ok := strings.Cut(f, "\t")
	if !ok {
		return inlineCode(f, maxExcerptName)
	}
	word := map[string]string{"A": "added", "M": "modified", "D": "deleted", "T": "type changed"}[status]
	if word == "" {
		return inlineCode(name, maxExcerptName)
	}
	return inlineCode(name, maxExcerptName) + " " + word
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
	buttons, left, cut := optionButtons(r, e, rec, clickable)
	if cut {
		list = optionList(e, rec)
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
		blocks = append(blocks, notButtons(r, left, clickable))
	}
	return blocks, list
}

// keyedButton is an option's button, with the option's key.
type keyedButton struct {
	key    string
	button slack.BlockElement
}

// optionButtons is a button per option (the recommended one, rec, primary), one per key; left are the keys of the
// options that can be no button (none is, unless clickable), and cut says whether a button had to cut its label.
func optionButtons(r *jobs.Run, e *jobs.Escalation, rec string, clickable bool) (buttons []keyedButton, left []string, cut bool) {
	seen := map[string]bool{}
	for _, o := range e.Options {
		if seen[o.Key] {
			continue // one answer, one button
		}
		seen[o.Key] = true
		v := ActionValue{RunID: r.ID, EscalationID: e.ID, Kind: KindChoose, Key: o.Key}
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
		buttons = append(buttons, keyedButton{o.Key, button(v, text, style)})
	}
	return buttons, left, cut
}

// optionList is a section with every option's label in full, for buttons that had to cut theirs.
func optionList(e *jobs.Escalation, rec string) slack.Block {
	lines := make([]string, 0, len(e.Options))
	for _, o := range e.Options {
		l := "*" + escapeCut(o.Key, maxActionField, false) + ")* " + escapeCut(singleLine(o.Label), 600, false)
		if o.Key == rec {
			l += " _(recommended)_"
		}
		lines = append(lines, l)
	}
	return packLines(lines, 1, func(n int) string { return fmt.Sprintf("_… and %s_", jobs.Count(n, "more option")) })[0]
}

// notButtons names the options that are no button (their keys, left), and how else to choose them.
func notButtons(r *jobs.Run, left []string, clickable bool) slack.Block {
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
	return contextBlock(fmt.Sprintf("%s not shown as buttons (%s): %s, or run %s from a terminal.",
		jobs.Count(len(left), "option"), names, how, inlineCode("orch escalation resolve "+r.ID+" --choose KEY", maxLine)))
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
	// A button is plain_text: a code span's backticks would show as they are ("Pin `numpy<2`"); the message above
	// keeps them, as mrkdwn renders them.
	label := strings.Join(strings.Fields(codeTicks.Replace(o.Label)), " ")
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

// codeTicks takes the backticks of inline code out of a label for plain text.
var codeTicks = strings.NewReplacer("`", "")

func button(v ActionValue, text string, style slack.Style) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(v.ActionID(), v.Encode(), plainText(cutPlain(text, maxButtonText))).WithStyle(style)
}

// maxButtonURL is the longest url a button takes (docs.slack.dev/reference/block-kit/block-elements/button-element).
const maxButtonURL = 3000

// pageButton is a link to a run's page in the web view (nil without one, or for a link that cannot be a button's). Slack
// opens the link in the browser and still sends the click to orch, which acknowledges it and does nothing else.
func pageButton(page string) *slack.ButtonBlockElement {
	if !isWebLink(page) || len(page) > maxButtonURL {
		return nil
	}
	b := slack.NewButtonBlockElement(ActionPage, "", plainText("Open run page"))
	b.URL = page
	return b
}

// isWebLink reports whether s is an absolute http(s) link with nothing in it that would end or break it.
func isWebLink(s string) bool {
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '<' || r == '>' || r == '|' || r == '"' {
			return false
		}
	}
	return true
}

func abortConfirm(r *jobs.Run) *slack.ConfirmationBlockObject {
	text := cutPlain(fmt.Sprintf("Run %s stops here, with its task unfinished. This cannot be undone.", r.ID), maxConfirmText)
	c := slack.NewConfirmationBlockObject(plainText(cutPlain("Abort this run?", maxConfirmTitle)), plainText(text),
		plainText(cutPlain("Abort run", maxConfirmButton)), plainText(cutPlain("Keep it", maxConfirmButton)))
	return c.WithStyle(slack.StyleDanger)
}

// answerLine says who answered what after how long (mrkdwn), and what in plain words for the fallback text, in the
// words every surface uses (escalation.Verb, escalation.Describe); a person's answer or reason follows them.
func answerLine(e *jobs.Escalation, res *jobs.Resolution, who, after string) (line, what string) {
	const room = maxSectionText - 400 // for the words around the human's text
	line = fmt.Sprintf("%s %s %s %s", answerEmoji[res.Type], who, escapeCut(singleLine(escalation.Verb(e, res)), 700, false), after)
	switch res.Type {
	case jobs.ResolveAnswer:
		if t := strings.TrimSpace(res.Text); t != "" && escalation.ChatCommand(res) == "" {
			line += ":\n" + escapeCut(res.Text, room, true)
		}
	case jobs.ResolveAbort, jobs.ResolveDecline:
		if strings.TrimSpace(res.Reason) != "" {
			line += ": " + escapeCut(res.Reason, room, true)
		}
	}
	return strings.TrimLeft(line, " "), escalation.Describe(e, res)
}

// answerEmoji marks each kind of answer.
var answerEmoji = map[jobs.ResolutionType]string{
	jobs.ResolveChoose:  ":white_check_mark:",
	jobs.ResolveAnswer:  ":speech_balloon:",
	jobs.ResolveResume:  ":arrow_forward:",
	jobs.ResolveRetry:   ":repeat:",
	jobs.ResolveAbort:   ":octagonal_sign:",
	jobs.ResolveForce:   ":warning:",
	jobs.ResolveDecline: ":no_entry_sign:",
}
