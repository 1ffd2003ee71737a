package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/bot/mirror"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/internal/workpool"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// command is a slash command as the bot uses it (the fields it needs of slack.SlashCommand).
type command struct {
	Text, UserID, ChannelID, ResponseURL, TeamID string
}

func parseCommand(body []byte) (command, error) {
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return command{}, err
	}
	return command{Text: unescapeSlack(v.Get("text")), UserID: v.Get("user_id"), ChannelID: v.Get("channel_id"),
		ResponseURL: v.Get("response_url"), TeamID: v.Get("team_id")}, nil
}

// handleCommand acks a slash command: its answer is the ack's text.
func (s *Server) handleCommand(w http.ResponseWriter, r *http.Request, body []byte) {
	cmd, err := parseCommand(body)
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	text, err := s.commands.command(cmd)
	if err != nil {
		reply(w, err.Error())
		return
	}
	reply(w, text)
}

// commands answers the slash commands: each is acked at once with a line for the requester, and its work (starting,
// aborting, looking up) is queued, its answer sent through the command's response_url.
type commands struct {
	talk      *talk
	runs      *newRuns
	jobs      *workpool.Pool
	store     *store.Store
	queue     escalation.Enqueuer
	mirror    *mirror.Mirror
	workspace string // absolute: plans resolve inside it
	now       func() time.Time
	log       *slog.Logger
}

// maxReason bounds the reason given for an abort: it is kept with the run and shown wherever the run is.
const maxReason = 500

// command acks a slash command with a line for the requester and queues the work; it never waits for Redis,
// the queue or Slack.
func (c *commands) command(cmd command) (string, error) {
	words := strings.Fields(cmd.Text)
	if len(words) == 0 || words[0] == "help" {
		return blocks.HelpText, nil
	}
	if _, ok := lookupCommands[words[0]]; ok {
		return c.lookup(cmd, words[0], words[1:])
	}
	switch words[0] {
	case "run":
		return c.ackRun(cmd, words[1:])
	case "do":
		return c.ackDo(cmd)
	case "status":
		return c.ackStatus(cmd, words[1:])
	case "abort":
		return c.ackAbort(cmd, words[1:])
	}
	return "", fmt.Errorf("unknown command %s.\n%s", blocks.Echo(words[0]), blocks.HelpText)
}

// ackRun acks `/orch run PLAN [--agent NAME] [--sim-scenario FILE]` and queues the start of the run.
func (c *commands) ackRun(cmd command, args []string) (string, error) {
	if !c.talk.allowed.Allows(cmd.UserID) {
		c.talk.refused(cmd.UserID, "run", cmd.Text)
		return "", errors.New("you are not allowed to start runs here (ORCH_ALLOWED_USERS)")
	}
	req, err := c.parseRun(args)
	if err != nil {
		return "", err
	}
	refund, err := c.runs.take(cmd.UserID, cmd.ChannelID)
	if err != nil {
		return "", err
	}
	req.Origin = jobs.Origin{Kind: "slack", User: cmd.UserID, Channel: cmd.ChannelID}
	tell := c.talk.responder(cmd.ResponseURL)
	if err := c.jobs.Submit(func(ctx context.Context) { c.runs.start(ctx, req, tell, refund) }); err != nil {
		refund()
		return "", err
	}
	rel, _ := filepath.Rel(c.workspace, req.Plan)
	return blocks.StartingReply(rel), nil
}

// ackDo acks `/orch do TEXT` and queues the start of a run of the words.
func (c *commands) ackDo(cmd command) (string, error) {
	if !c.talk.allowed.Allows(cmd.UserID) {
		c.talk.refused(cmd.UserID, "do", cmd.Text)
		return "", errors.New("you are not allowed to start runs here (ORCH_ALLOWED_USERS)")
	}
	text := doText(cmd.Text)
	if text == "" {
		return "", errors.New("what should the agent do? e.g. `/orch do fix the flaky retry test in jobs`")
	}
	refund, err := c.runs.take(cmd.UserID, cmd.ChannelID)
	if err != nil {
		return "", err
	}
	req := StartRequest{Text: text, Origin: jobs.Origin{Kind: "slack", User: cmd.UserID, Channel: cmd.ChannelID}}
	tell := c.talk.responder(cmd.ResponseURL)
	if err := c.jobs.Submit(func(ctx context.Context) { c.runs.start(ctx, req, tell, refund) }); err != nil {
		refund()
		return "", err
	}
	return blocks.DoingReply(text), nil
}

// ackStatus acks `/orch status [RUN_ID]` and queues the look-up.
func (c *commands) ackStatus(cmd command, args []string) (string, error) {
	if !c.talk.allowed.Allows(cmd.UserID) {
		c.talk.refused(cmd.UserID, "status", cmd.Text)
		return "", errors.New("you are not allowed to look at runs here (ORCH_ALLOWED_USERS)")
	}
	id := ""
	if len(args) > 0 {
		id = args[0]
	}
	if id != "" && !isRunID(id) {
		return "", fmt.Errorf("%s is not a run id (run ids look like `r-k3j9x2m4qa`): `/orch status [RUN_ID]`", blocks.Echo(id))
	}
	if err := c.jobs.Submit(func(ctx context.Context) { c.status(ctx, id, cmd.UserID, cmd.ChannelID, cmd.ResponseURL) }); err != nil {
		return "", err
	}
	return "Looking it up…", nil
}

// ackAbort acks `/orch abort RUN_ID [REASON]` and queues the abort.
func (c *commands) ackAbort(cmd command, args []string) (string, error) {
	if len(args) < 1 {
		return "", errors.New("which run? `/orch abort RUN_ID`")
	}
	if !c.talk.allowed.Allows(cmd.UserID) {
		c.talk.refused(cmd.UserID, "abort", cmd.Text)
		return "", errors.New("you are not allowed to abort runs here (ORCH_ALLOWED_USERS)")
	}
	id := args[0]
	if !isRunID(id) {
		return "", fmt.Errorf("%s is not a run id (run ids look like `r-k3j9x2m4qa`): `/orch abort RUN_ID [REASON]`", blocks.Echo(id))
	}
	// The reason is kept with the run, its audit and its events, and shown wherever the run is: a few lines at most.
	reason := blocks.Kept(strings.Join(args[1:], " "), maxReason)
	if err := c.jobs.Submit(func(ctx context.Context) { c.abort(ctx, id, cmd.UserID, reason, cmd.ResponseURL) }); err != nil {
		return "", err
	}
	return fmt.Sprintf("Aborting %s…", blocks.Echo(id)), nil
}

// doText is what `/orch do` asks for: the command's text after "do", its line breaks kept.
func doText(text string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "do"))
}

// parseRun reads `run PLAN [--agent NAME] [--sim-scenario FILE]`.
func (c *commands) parseRun(args []string) (StartRequest, error) {
	var req StartRequest
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--agent", "--sim-scenario":
			if !hasVal {
				if i+1 >= len(args) {
					return req, fmt.Errorf("%s needs a value", blocks.Echo(name))
				}
				i++
				val = args[i]
			}
			if name == "--agent" {
				// From Slack only the known agents: a cmd: template would let anyone allowed to start a run pick
				// the program the workers execute.
				switch val {
				case "claude", "codex", "sim":
				default:
					return req, fmt.Errorf("%s: from Slack choose claude, codex or sim (command templates are set by the operator with ORCH_AGENT)", blocks.Echo("--agent "+val))
				}
				req.Agent = val
				continue
			}
			p, err := c.resolvePlan(val)
			if err != nil {
				return req, err
			}
			req.SimScenario = p
		default:
			if strings.HasPrefix(a, "-") {
				return req, fmt.Errorf("unknown option %s (use `--agent NAME` or `--sim-scenario FILE`)", blocks.Echo(a))
			}
			if req.Plan != "" {
				return req, fmt.Errorf("one plan at a time (got %s and %s)", blocks.Echo(filepath.Base(req.Plan)), blocks.Echo(a))
			}
			p, err := c.resolvePlan(a)
			if err != nil {
				return req, err
			}
			req.Plan = p
		}
	}
	if req.Plan == "" {
		return req, errors.New("which plan? `/orch run PLAN`")
	}
	return req, nil
}

// resolvePlan turns a plan argument into a path inside the workspace (runs.PlanIn): anything that escapes it, or is no
// file in it, is refused. It is checked before the ack says the run starts: a stat, well within Slack's 3 s. The
// answer names the path as it was given, as inline code, never where the workspace is on the server.
func (c *commands) resolvePlan(arg string) (string, error) {
	if arg == "" {
		return "", errors.New("which plan? `/orch run PLAN`")
	}
	p, err := runs.PlanIn(c.workspace, arg)
	if err != nil {
		return "", echoedArg(err, arg)
	}
	return p, nil
}

// echoedArg is a refusal of runs.PlanIn's, which names the argument as given, with the argument said back as Slack
// shows a person's input (Echo): escaped, one line, bounded.
func echoedArg(err error, arg string) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, arg); ok {
		return errors.New(blocks.Echo(arg) + rest)
	}
	return fmt.Errorf("%s is not a plan in the workspace", blocks.Echo(arg))
}

// status answers /orch status: a run's status, and its open question when user may see it from channel
// (Allowlist.MayAnswer).
func (c *commands) status(ctx context.Context, id, user, channel, responseURL string) {
	var run *jobs.Run
	var err error
	if id == "" {
		run, err = c.store.Latest(ctx, func(r *jobs.Run) bool { return r.Origin.Kind == "slack" })
	} else {
		run, err = c.store.Get(ctx, id)
	}
	switch {
	case errors.Is(err, jobs.ErrRunNotFound) && id == "":
		c.talk.respond(ctx, responseURL, "No run was started from Slack yet: `/orch run PLAN` starts one.")
		return
	case errors.Is(err, jobs.ErrRunNotFound):
		c.talk.respond(ctx, responseURL, fmt.Sprintf("No such run: %s. `/orch history` lists this channel's runs.", blocks.Echo(id)))
		return
	case err != nil:
		c.log.Warn("looking up a run's status", "run_id", id, "err", err)
		c.talk.respond(ctx, responseURL, unavailableText)
		return
	}
	c.talk.respond(ctx, responseURL, blocks.StatusText(run, c.talk.allowed.MayAnswer(user, channel, run)))
}

// abort answers /orch abort: the run aborted, or why not.
func (c *commands) abort(ctx context.Context, id, user, reason, responseURL string) {
	if reason == "" {
		reason = "aborted from Slack"
	}
	run, err := escalation.Abort(ctx, c.store, c.queue, id, user, "slack", reason)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		c.talk.respond(ctx, responseURL, fmt.Sprintf("Could not abort: no such run %s.", blocks.Echo(id)))
		return
	case errors.Is(err, escalation.ErrNoOpenEscalation), errors.Is(err, escalation.ErrAlreadyResolved),
		errors.Is(err, escalation.ErrInvalid):
		c.talk.respond(ctx, responseURL, "Could not abort: "+safetext.Bound(err.Error(), maxErrorEcho))
		return
	case err != nil:
		c.log.Warn("aborting a run", "run_id", id, "err", err)
		c.talk.respond(ctx, responseURL, unavailableText)
		return
	}
	c.talk.respond(ctx, responseURL, blocks.AbortedReply(run))
}
