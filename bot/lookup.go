package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// What the lookup commands (history, costs, questions, logs) show at most.
const (
	historyRuns    = 10 // runs /orch history lists
	costsRuns      = 20 // runs /orch costs lists without a RUN_ID
	questionsShown = 10 // questions /orch questions lists
	logEvents      = 15 // events /orch logs shows
	// maxEcho bounds what of a person's input an answer says back to them.
	maxEcho = 80
	// lookupSections bounds the sections a list of an answer takes: its lines are bounded, so a few always hold it.
	lookupSections = 5
)

// lookupCommand is a command that reads the store and changes nothing: its usage and how many arguments it takes.
type lookupCommand struct {
	usage            string
	minArgs, maxArgs int
	// runID says its argument is a run id.
	runID bool
}

var lookupCommands = map[string]lookupCommand{
	"history":   {usage: "/orch history"},
	"costs":     {usage: "/orch costs [RUN_ID]", maxArgs: 1, runID: true},
	"questions": {usage: "/orch questions"},
	"logs":      {usage: "/orch logs RUN_ID", minArgs: 1, maxArgs: 1, runID: true},
}

// lookup acks a lookup command and queues the reading: its answer comes through response_url. Someone outside
// ORCH_ALLOWED_USERS (when it is set) is refused, and the refusal audited.
func (s *Server) lookup(cmd command, name string, args []string) (string, error) {
	lc := lookupCommands[name]
	if !s.allowed(cmd.UserID) {
		s.refused(cmd.UserID, name, cmd.Text)
		return "", errors.New("you are not allowed to look at runs here (ORCH_ALLOWED_USERS)")
	}
	switch {
	case len(args) < lc.minArgs:
		return "", fmt.Errorf("which run? `%s`", lc.usage)
	case len(args) > lc.maxArgs && lc.maxArgs == 0:
		return "", fmt.Errorf("`/orch %s` takes no arguments (got %s): `%s`", name, echo(strings.Join(args, " ")), lc.usage)
	case len(args) > lc.maxArgs:
		return "", fmt.Errorf("one run at a time (got %s): `%s`", echo(strings.Join(args, " ")), lc.usage)
	}
	if lc.runID && len(args) == 1 && !isRunID(args[0]) {
		return "", fmt.Errorf("%s is not a run id (run ids look like `r-k3j9x2m4qa`; `/orch history` lists this channel's): `%s`",
			echo(args[0]), lc.usage)
	}
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	var job func(ctx context.Context)
	switch name {
	case "history":
		job = func(ctx context.Context) { s.history(ctx, cmd.ChannelID, cmd.ResponseURL) }
	case "costs":
		job = func(ctx context.Context) { s.costs(ctx, cmd.ChannelID, id, cmd.ResponseURL) }
	case "questions":
		job = func(ctx context.Context) { s.questions(ctx, cmd.UserID, cmd.ChannelID, cmd.ResponseURL) }
	case "logs":
		job = func(ctx context.Context) { s.logs(ctx, cmd.ChannelID, id, cmd.ResponseURL) }
	}
	if err := s.jobs.submit(job); err != nil {
		return "", err
	}
	return "Looking it up…", nil
}

// echo is a person's input said back to them: one line, bounded, as inline code.
func echo(s string) string { return inlineCode(s, maxEcho) }

// isRunID reports whether s can be a run id: a short word of letters, digits, '-' and '_' (the store's rule; ids
// orch makes are "r-" and ten more).
func isRunID(s string) bool {
	if s == "" || len(s) > maxActionField {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// history answers /orch history: the runs started in the channel, newest first.
func (s *Server) history(ctx context.Context, channel, responseURL string) {
	runs, more, err := s.cfg.Store.Find(ctx, store.Query{Channel: channel}, 0, historyRuns)
	if err != nil {
		s.lookupFailed(ctx, responseURL, "listing a channel's runs", err)
		return
	}
	if len(runs) == 0 {
		s.respond(ctx, responseURL, "No run was started in this channel yet: `/orch run PLAN` starts one.")
		return
	}
	lines := make([]string, 0, len(runs))
	for _, r := range runs {
		link, err := s.runThreadLink(ctx, r.ID)
		if err != nil {
			s.lookupFailed(ctx, responseURL, "reading a run's thread", err)
			return
		}
		lines = append(lines, s.historyLine(r, link))
	}
	head := fmt.Sprintf("*Runs started in this channel*, newest first (%d)", len(runs))
	if more {
		head = fmt.Sprintf("*The %d latest runs started in this channel*, newest first", len(runs))
	}
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	s.respondMessage(ctx, responseURL, newMessage(fmt.Sprintf("%s in this channel", jobs.Count(len(runs), "run")), blocks))
}

// historyLine is one run of /orch history: status, id, title, who started it, when, how long, cost, thread.
func (s *Server) historyLine(r *jobs.Run, link string) string {
	usd, _, _ := r.Cost()
	took := "took " + humanDuration(runElapsed(r))
	if !r.Status.Terminal() {
		took = humanDuration(r.Duration(s.cfg.Now())) + " so far"
	}
	parts := []string{
		runEmoji(r.Status) + " " + inlineCode(r.ID, maxActionField) + " *" + escapeCut(runTitle(r), 100, false) + "*",
		"by " + startedBy(r.Origin),
		startTime(r.CreatedAt),
		took,
		formatUSD(usd),
	}
	if link != "" {
		parts = append(parts, slackLink(link, "thread"))
	}
	return strings.Join(parts, " · ")
}

// costs answers /orch costs: one run's costs per task and per model, or the channel's latest runs' with their total.
func (s *Server) costs(ctx context.Context, channel, id, responseURL string) {
	if id != "" {
		r, ok := s.channelRun(ctx, channel, id, responseURL)
		if ok {
			s.respondMessage(ctx, responseURL, runCostsMessage(r))
		}
		return
	}
	runs, more, err := s.cfg.Store.Find(ctx, store.Query{Channel: channel}, 0, costsRuns)
	if err != nil {
		s.lookupFailed(ctx, responseURL, "listing a channel's runs", err)
		return
	}
	if len(runs) == 0 {
		s.respond(ctx, responseURL, "No run was started in this channel yet, so nothing has cost anything here.")
		return
	}
	s.respondMessage(ctx, responseURL, channelCostsMessage(runs, more))
}

// runCostsMessage is one run's costs as `orch costs RUN_ID` prints them: per task the attempts, the agent's tokens
// and dollars and the brain's calls, tokens and dollars; the run's sums; per model; the total.
func runCostsMessage(r *jobs.Run) Message {
	c := r.Costs()
	head := fmt.Sprintf("*Costs of run %s* (%s): *%s* in all\n%s\n%s", inlineCode(r.ID, maxActionField),
		escapeCut(string(r.Status), 40, false), formatUSD(c.TotalUSD()), agentCost(c.Agent), brainCost(c.Brain))
	blocks := []slack.Block{sectionBlock(head)}
	tasks := make([]string, 0, len(c.Tasks))
	for _, t := range c.Tasks {
		tasks = append(tasks, fmt.Sprintf("*%s* · %s · %s · %s", escapeCut(taskLabel(r, t.TaskID), 120, false),
			jobs.Count(t.Attempts, "attempt"), agentCost(t.Agent), brainCost(t.Brain)))
	}
	if len(tasks) == 0 {
		tasks = append(tasks, "_No tasks._")
	}
	blocks = append(blocks, sectionBlock("*Per task*"))
	blocks = append(blocks, packLines(tasks, lookupSections, func(n int) string {
		return fmt.Sprintf("_… and %s_", jobs.Count(n, "more task"))
	})...)
	if len(c.Models) > 0 {
		models := make([]string, 0, len(c.Models))
		for _, m := range c.Models {
			models = append(models, fmt.Sprintf("%s · %s · %s tokens in, %s out · %s", inlineCode(m.Scope, 100),
				jobs.Count(m.Calls, "call"), groupDigits(m.InputTokens), groupDigits(m.OutputTokens), formatUSD(m.CostUSD)))
		}
		blocks = append(blocks, sectionBlock("*Per model*"))
		blocks = append(blocks, packLines(models, 2, func(n int) string {
			return fmt.Sprintf("_… and %s_", jobs.Count(n, "more model"))
		})...)
	}
	text := fmt.Sprintf("Run %s cost %s", r.ID, formatUSD(c.TotalUSD()))
	return newMessage(escapeCut(text, maxFallbackText, false), blocks)
}

// channelCostsMessage is the costs of a channel's latest runs as `orch costs` prints them, and their total.
func channelCostsMessage(runs []*jobs.Run, more bool) Message {
	var total float64
	lines := make([]string, 0, len(runs))
	for _, r := range runs {
		c := r.Costs()
		total += c.TotalUSD()
		lines = append(lines, fmt.Sprintf("%s %s *%s* · %s · %s · %s", runEmoji(r.Status), inlineCode(r.ID, maxActionField),
			formatUSD(c.TotalUSD()), escapeCut(runTitle(r), 80, false), agentCost(c.Agent), brainCost(c.Brain)))
	}
	head := fmt.Sprintf("*Costs of the runs started in this channel*, newest first: *%s* for %s", formatUSD(total),
		jobs.Count(len(runs), "run"))
	if more {
		head = fmt.Sprintf("*Costs of the %d latest runs started in this channel*, newest first: *%s* in all",
			len(runs), formatUSD(total))
	}
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	blocks = append(blocks, contextBlock(fmt.Sprintf("*Total:* %s · `/orch costs RUN_ID` breaks a run down per task",
		formatUSD(total))))
	text := fmt.Sprintf("%s in this channel cost %s", jobs.Count(len(runs), "run"), formatUSD(total))
	return newMessage(text, blocks)
}

// agentCost is the agent's share of a cost: "agent 1,200 tokens in, 300 out, $0.0120".
func agentCost(c jobs.CostLine) string {
	return fmt.Sprintf("agent %s tokens in, %s out, %s", groupDigits(c.InputTokens), groupDigits(c.OutputTokens),
		formatUSD(c.CostUSD))
}

// brainCost is the brain's share: "brain 2 calls, 400 tokens in, 20 out, $0.0010".
func brainCost(c jobs.CostLine) string {
	return fmt.Sprintf("brain %s, %s tokens in, %s out, %s", jobs.Count(c.Calls, "call"), groupDigits(c.InputTokens),
		groupDigits(c.OutputTokens), formatUSD(c.CostUSD))
}

// questions answers /orch questions: the open questions user may answer, oldest first.
func (s *Server) questions(ctx context.Context, user, channel, responseURL string) {
	qs, n, err := s.openQuestions(ctx, user, channel, questionsShown)
	if err != nil {
		s.lookupFailed(ctx, responseURL, "listing open questions", err)
		return
	}
	if n == 0 {
		s.respond(ctx, responseURL, "No question waits for an answer from you.")
		return
	}
	now := s.cfg.Now()
	lines := make([]string, 0, len(qs))
	for _, q := range qs {
		link, err := s.runThreadLink(ctx, q.Run.ID)
		if err != nil {
			s.lookupFailed(ctx, responseURL, "reading a run's thread", err)
			return
		}
		line := fmt.Sprintf(":raising_hand: %s · *%s*: %s\nstarted by %s · waiting %s", inlineCode(q.Run.ID, maxActionField),
			escapeCut(taskLabel(q.Run, q.Escalation.TaskID), 100, false), questionHead(q.Escalation),
			startedBy(q.Run.Origin), humanDuration(now.Sub(q.Escalation.CreatedAt)))
		if link != "" {
			line += " · " + slackLink(link, "answer in the thread")
		}
		lines = append(lines, line)
	}
	head := fmt.Sprintf("*Questions waiting for an answer*, oldest first (%d)", n)
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	if left := n - len(qs); left > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf("_… and %d more_", left)))
	}
	s.respondMessage(ctx, responseURL, newMessage(fmt.Sprintf("%s waiting for an answer", jobs.Count(n, "question")), blocks))
}

// questionHead is the first line of a question that says something, bounded; the trigger when there is no text.
func questionHead(e *jobs.Escalation) string {
	if q := safetext.HeadLine(e.Question); q != "" {
		return escapeCut(q, 150, false)
	}
	return "_" + escapeCut(e.Trigger.Describe(e.Name), 100, false) + "_"
}

// logs answers /orch logs: a run's last events, as its progress message shows them.
func (s *Server) logs(ctx context.Context, channel, id, responseURL string) {
	r, ok := s.channelRun(ctx, channel, id, responseURL)
	if !ok {
		return
	}
	events, err := s.cfg.Store.Recent(ctx, r.ID, logEvents)
	if err != nil {
		s.lookupFailed(ctx, responseURL, "reading a run's events", err)
		return
	}
	lines := make([]string, 0, len(events))
	for _, e := range events {
		if l := eventLine(e); l != "" {
			lines = append(lines, eventTime(e.Time)+" "+l)
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "_No events yet._")
	}
	head := fmt.Sprintf("*Latest events of run %s* (%s), oldest first\n%s", inlineCode(r.ID, maxActionField),
		escapeCut(runTitle(r), 100, false), runStatusLine(r))
	blocks := []slack.Block{sectionBlock(head)}
	blocks = append(blocks, packLines(lines, lookupSections, moreLines)...)
	s.respondMessage(ctx, responseURL, newMessage(escapeCut(fmt.Sprintf("Run %s: %s", r.ID, fallbackStatus(r)),
		maxFallbackText, false), blocks))
}

// channelRun reads a run started in channel, answering the person itself when there is none or the store cannot
// be read. A run of another channel is no run here: a channel's runs are its own.
func (s *Server) channelRun(ctx context.Context, channel, id, responseURL string) (*jobs.Run, bool) {
	r, err := s.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound) || err == nil && r.Origin.Channel != channel:
		s.respond(ctx, responseURL, fmt.Sprintf("No run %s here: `/orch history` lists the runs started in this channel.",
			echo(id)))
		return nil, false
	case err != nil:
		s.lookupFailed(ctx, responseURL, "reading a run", err)
		return nil, false
	}
	return r, true
}

// runThreadLink is a link to a run's thread, or "" when it has none (yet).
func (s *Server) runThreadLink(ctx context.Context, runID string) (string, error) {
	st, err := s.poster.mirror.State(ctx, runID)
	if err != nil {
		return "", err
	}
	return s.threadLink(st[fieldChannel], st[fieldRootTS]), nil
}

// lookupFailed says the store could not be read: the one failure a lookup has.
func (s *Server) lookupFailed(ctx context.Context, responseURL, what string, err error) {
	s.log.Warn(what, "err", err)
	s.respond(ctx, responseURL, unavailableText)
}

// respondMessage sends a delayed ephemeral answer with blocks through a request's response_url; the text is what
// notifications show.
func (s *Server) respondMessage(ctx context.Context, responseURL string, m Message) {
	if responseURL == "" {
		return
	}
	err := slack.PostWebhookContext(ctx, responseURL, &slack.WebhookMessage{Text: replyText(m.Text),
		Blocks: &slack.Blocks{BlockSet: m.Blocks}, ResponseType: "ephemeral"})
	if err != nil {
		s.log.Warn("answering through response_url", "err", err)
	}
}

func moreLines(n int) string { return fmt.Sprintf("_… and %d more_", n) }

// runTitle is what a run is about: its plan's title, or the first line of what was asked in words.
func runTitle(r *jobs.Run) string {
	if r.Request != "" {
		if l := safetext.HeadLine(r.Request); l != "" {
			return l
		}
	}
	return planTitle(r)
}

// runEmoji is a run's status at a glance, as its status line shows it.
func runEmoji(st jobs.RunStatus) string {
	switch st {
	case jobs.RunQueued:
		return ":inbox_tray:"
	case jobs.RunRunning:
		return ":hourglass_flowing_sand:"
	case jobs.RunParked:
		return ":raising_hand:"
	case jobs.RunPaused:
		return ":pause_button:"
	case jobs.RunCompleted:
		return ":white_check_mark:"
	case jobs.RunFailed:
		return ":x:"
	case jobs.RunAborted:
		return ":octagonal_sign:"
	}
	return ":grey_question:"
}

// startTime is when something started, in each reader's own time zone and words ("Today at 9:41 AM"); the text
// after "|" is what clients that cannot show it print.
func startTime(t time.Time) string {
	if t.IsZero() {
		return "·"
	}
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s UTC>", t.Unix(), t.UTC().Format("2006-01-02 15:04"))
}

// slackLink is a link in mrkdwn: the URL with &, < and > escaped as in any text and no "|" (it would end the URL),
// and its label escaped.
func slackLink(url, label string) string {
	url = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "%7C", " ", "%20").Replace(url)
	return "<" + url + "|" + escapeCut(label, 100, false) + ">"
}
