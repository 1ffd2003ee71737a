package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// What the lookup commands (history, costs, questions, logs) show at most.
const (
	historyRuns    = 10 // runs /orch history lists
	costsRuns      = 20 // runs /orch costs lists without a RUN_ID
	questionsShown = 10 // questions /orch questions lists
	logEvents      = 15 // events /orch logs shows
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
func (c *commands) lookup(cmd command, name string, args []string) (string, error) {
	lc := lookupCommands[name]
	if !c.talk.allowed.Allows(cmd.UserID) {
		c.talk.refused(cmd.UserID, name, cmd.Text)
		return "", errors.New("you are not allowed to look at runs here (ORCH_ALLOWED_USERS)")
	}
	switch {
	case len(args) < lc.minArgs:
		return "", fmt.Errorf("which run? `%s`", lc.usage)
	case len(args) > lc.maxArgs && lc.maxArgs == 0:
		return "", fmt.Errorf("`/orch %s` takes no arguments (got %s): `%s`", name, blocks.Echo(strings.Join(args, " ")), lc.usage)
	case len(args) > lc.maxArgs:
		return "", fmt.Errorf("one run at a time (got %s): `%s`", blocks.Echo(strings.Join(args, " ")), lc.usage)
	}
	if lc.runID && len(args) == 1 && !isRunID(args[0]) {
		return "", fmt.Errorf("%s is not a run id (run ids look like `r-k3j9x2m4qa`; `/orch history` lists this channel's): `%s`",
			blocks.Echo(args[0]), lc.usage)
	}
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	var job func(ctx context.Context)
	switch name {
	case "history":
		job = func(ctx context.Context) { c.history(ctx, cmd.ChannelID, cmd.ResponseURL) }
	case "costs":
		job = func(ctx context.Context) { c.costs(ctx, cmd.ChannelID, id, cmd.ResponseURL) }
	case "questions":
		job = func(ctx context.Context) { c.questions(ctx, cmd.UserID, cmd.ChannelID, cmd.ResponseURL) }
	case "logs":
		job = func(ctx context.Context) { c.logs(ctx, cmd.ChannelID, id, cmd.ResponseURL) }
	}
	if err := c.jobs.Submit(job); err != nil {
		return "", err
	}
	return "Looking it up…", nil
}

// maxRunID is the longest run id: the store's bound, and what a button can carry.
const maxRunID = 64

// isRunID reports whether s can be a run id: a short word of letters, digits, '-' and '_' (the store's rule; ids
// orch makes are "r-" and ten more).
func isRunID(s string) bool {
	if s == "" || len(s) > maxRunID {
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
func (c *commands) history(ctx context.Context, channel, responseURL string) {
	runs, more, err := c.store.Find(ctx, store.Query{Channel: channel}, 0, historyRuns)
	if err != nil {
		c.lookupFailed(ctx, responseURL, "listing a channel's runs", err)
		return
	}
	if len(runs) == 0 {
		c.talk.respond(ctx, responseURL, "No run was started in this channel yet: `/orch run PLAN` starts one.")
		return
	}
	links, err := c.talk.threadLinks(ctx, runs)
	if err != nil {
		c.lookupFailed(ctx, responseURL, "reading a run's thread", err)
		return
	}
	c.talk.respondMessage(ctx, responseURL, blocks.HistoryMessage(runs, more, links, c.now()))
}

// costs answers /orch costs: one run's costs per task and per model, or the channel's latest runs' with their total.
func (c *commands) costs(ctx context.Context, channel, id, responseURL string) {
	if id != "" {
		r, ok := c.channelRun(ctx, channel, id, responseURL)
		if ok {
			c.talk.respondMessage(ctx, responseURL, blocks.RunCostsMessage(r))
		}
		return
	}
	runs, more, err := c.store.Find(ctx, store.Query{Channel: channel}, 0, costsRuns)
	if err != nil {
		c.lookupFailed(ctx, responseURL, "listing a channel's runs", err)
		return
	}
	if len(runs) == 0 {
		c.talk.respond(ctx, responseURL, "No run was started in this channel yet, so nothing has cost anything here.")
		return
	}
	c.talk.respondMessage(ctx, responseURL, blocks.ChannelCostsMessage(runs, more))
}

// questions answers /orch questions: the open questions user may answer, oldest first.
func (c *commands) questions(ctx context.Context, user, channel, responseURL string) {
	qs, n, err := c.mirror.OpenQuestions(ctx, user, channel, questionsShown)
	if err != nil {
		c.lookupFailed(ctx, responseURL, "listing open questions", err)
		return
	}
	if n == 0 {
		c.talk.respond(ctx, responseURL, "No question waits for an answer from you.")
		return
	}
	now := c.now()
	runs := make([]*jobs.Run, 0, len(qs))
	for _, q := range qs {
		runs = append(runs, q.Run)
	}
	links, err := c.talk.threadLinks(ctx, runs)
	if err != nil {
		c.lookupFailed(ctx, responseURL, "reading a run's thread", err)
		return
	}
	c.talk.respondMessage(ctx, responseURL, blocks.QuestionsMessage(qs, n, links, now))
}

// logs answers /orch logs: a run's last events, as its progress message shows them.
func (c *commands) logs(ctx context.Context, channel, id, responseURL string) {
	r, ok := c.channelRun(ctx, channel, id, responseURL)
	if !ok {
		return
	}
	events, err := c.store.Recent(ctx, r.ID, logEvents)
	if err != nil {
		c.lookupFailed(ctx, responseURL, "reading a run's events", err)
		return
	}
	c.talk.respondMessage(ctx, responseURL, blocks.LogsMessage(r, events))
}

// channelRun reads a run started in channel, answering the person itself when there is none or the store cannot
// be read. A run of another channel is no run here: a channel's runs are its own.
func (c *commands) channelRun(ctx context.Context, channel, id, responseURL string) (*jobs.Run, bool) {
	r, err := c.store.Get(ctx, id)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound) || err == nil && r.Origin.Channel != channel:
		c.talk.respond(ctx, responseURL, fmt.Sprintf("No run %s here: `/orch history` lists the runs started in this channel.",
			blocks.Echo(id)))
		return nil, false
	case err != nil:
		c.lookupFailed(ctx, responseURL, "reading a run", err)
		return nil, false
	}
	return r, true
}

// lookupFailed says the store could not be read: the one failure a lookup has.
func (c *commands) lookupFailed(ctx context.Context, responseURL, what string, err error) {
	c.log.Warn(what, "err", err)
	c.talk.respond(ctx, responseURL, unavailableText)
}
