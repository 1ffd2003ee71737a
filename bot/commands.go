package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/orchrun/orch/bot/blocks"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
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

func (s *Server) handleCommand(w http.ResponseWriter, r *http.Request, body []byte) {
	cmd, err := parseCommand(body)
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	text, err := s.command(cmd)
	if err != nil {
		reply(w, err.Error())
		return
	}
	reply(w, text)
}

// command acks a slash command with a line for the requester and queues the work; it never waits for Redis,
// the queue or Slack.
func (s *Server) command(cmd command) (string, error) {
	words := strings.Fields(cmd.Text)
	if len(words) == 0 || words[0] == "help" {
		return blocks.HelpText, nil
	}
	if _, ok := lookupCommands[words[0]]; ok {
		return s.lookup(cmd, words[0], words[1:])
	}
	switch words[0] {
	case "run":
		if !s.allowed(cmd.UserID) {
			s.refused(cmd.UserID, "run", cmd.Text)
			return "", errors.New("you are not allowed to start runs here (ORCH_ALLOWED_USERS)")
		}
		req, err := s.parseRun(words[1:])
		if err != nil {
			return "", err
		}
		refund, err := s.limits.take(cmd.UserID, cmd.ChannelID)
		if err != nil {
			return "", err
		}
		req.Origin = jobs.Origin{Kind: "slack", User: cmd.UserID, Channel: cmd.ChannelID}
		if err := s.jobs.submit(func(ctx context.Context) { s.startRun(ctx, req, s.responder(cmd.ResponseURL), refund) }); err != nil {
			refund()
			return "", err
		}
		rel, _ := filepath.Rel(s.cfg.Workspace, req.Plan)
		return blocks.StartingReply(rel), nil
	case "do":
		if !s.allowed(cmd.UserID) {
			s.refused(cmd.UserID, "do", cmd.Text)
			return "", errors.New("you are not allowed to start runs here (ORCH_ALLOWED_USERS)")
		}
		text := doText(cmd.Text)
		if text == "" {
			return "", errors.New("what should the agent do? e.g. `/orch do fix the flaky retry test in jobs`")
		}
		refund, err := s.limits.take(cmd.UserID, cmd.ChannelID)
		if err != nil {
			return "", err
		}
		req := StartRequest{Text: text, Origin: jobs.Origin{Kind: "slack", User: cmd.UserID, Channel: cmd.ChannelID}}
		if err := s.jobs.submit(func(ctx context.Context) { s.startRun(ctx, req, s.responder(cmd.ResponseURL), refund) }); err != nil {
			refund()
			return "", err
		}
		return blocks.DoingReply(text), nil
	case "status":
		if !s.allowed(cmd.UserID) {
			s.refused(cmd.UserID, "status", cmd.Text)
			return "", errors.New("you are not allowed to look at runs here (ORCH_ALLOWED_USERS)")
		}
		id := ""
		if len(words) > 1 {
			id = words[1]
		}
		if id != "" && !isRunID(id) {
			return "", fmt.Errorf("%s is not a run id (run ids look like `r-k3j9x2m4qa`): `/orch status [RUN_ID]`", blocks.Echo(id))
		}
		if err := s.jobs.submit(func(ctx context.Context) { s.status(ctx, id, cmd.UserID, cmd.ChannelID, cmd.ResponseURL) }); err != nil {
			return "", err
		}
		return "Looking it up…", nil
	case "abort":
		if len(words) < 2 {
			return "", errors.New("which run? `/orch abort RUN_ID`")
		}
		if !s.allowed(cmd.UserID) {
			s.refused(cmd.UserID, "abort", cmd.Text)
			return "", errors.New("you are not allowed to abort runs here (ORCH_ALLOWED_USERS)")
		}
		id := words[1]
		if !isRunID(id) {
			return "", fmt.Errorf("%s is not a run id (run ids look like `r-k3j9x2m4qa`): `/orch abort RUN_ID [REASON]`", blocks.Echo(id))
		}
		// The reason is kept with the run, its audit and its events, and shown wherever the run is: a few lines at most.
		reason := blocks.Kept(strings.Join(words[2:], " "), maxReason)
		if err := s.jobs.submit(func(ctx context.Context) { s.abort(ctx, id, cmd.UserID, reason, cmd.ResponseURL) }); err != nil {
			return "", err
		}
		return fmt.Sprintf("Aborting %s…", blocks.Echo(id)), nil
	}
	return "", fmt.Errorf("unknown command %s.\n%s", blocks.Echo(words[0]), blocks.HelpText)
}

// responder answers a slash command through its response_url.
func (s *Server) responder(responseURL string) func(context.Context, string) {
	return func(ctx context.Context, text string) { s.respond(ctx, responseURL, text) }
}

// doText is what `/orch do` asks for: the command's text after "do", its line breaks kept.
func doText(text string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "do"))
}

// parseRun reads `run PLAN [--agent NAME] [--sim-scenario FILE]`.
func (s *Server) parseRun(args []string) (StartRequest, error) {
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
			p, err := s.resolvePlan(val)
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
			p, err := s.resolvePlan(a)
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

const (
	// maxErrorEcho bounds the error a reply passes on (one that quotes a request or a plan).
	maxErrorEcho = 2000
	// maxReason bounds the reason given for an abort: it is kept with the run and shown wherever the run is.
	maxReason = 500
	// maxRefusalDetail bounds what of a refused request its audit keeps.
	maxRefusalDetail = 200
)

// unavailableText is what a person hears when orch cannot reach its store: nothing changed, and trying again later
// is the thing to do.
const unavailableText = "orch cannot reach its store (Redis) right now, so nothing was changed: try again in a moment."

// startRun starts a run and follows it; tell says what went wrong to whoever asked.
// A run that could not start gives its place under the limits back (refund).
func (s *Server) startRun(ctx context.Context, req StartRequest, tell func(context.Context, string), refund func()) {
	run, err := s.cfg.Starter.Start(ctx, req)
	if err != nil {
		refund()
		if s.cfg.Store.Ping(ctx) != nil {
			s.log.Warn("starting a run", "err", err)
			tell(ctx, unavailableText)
			return
		}
		tell(ctx, "Could not start the run: "+safetext.Bound(err.Error(), maxErrorEcho))
		return
	}
	if err := s.poster.follow(ctx, run.ID); err != nil {
		s.log.Error("following a new run", "run_id", run.ID, "err", err)
	}
}

// status answers /orch status: a run's status, and its open question when user may see it from channel (mayAnswer).
func (s *Server) status(ctx context.Context, id, user, channel, responseURL string) {
	var run *jobs.Run
	var err error
	if id == "" {
		run, err = s.cfg.Store.Latest(ctx, func(r *jobs.Run) bool { return r.Origin.Kind == "slack" })
	} else {
		run, err = s.cfg.Store.Get(ctx, id)
	}
	switch {
	case errors.Is(err, jobs.ErrRunNotFound) && id == "":
		s.respond(ctx, responseURL, "No run was started from Slack yet: `/orch run PLAN` starts one.")
		return
	case errors.Is(err, jobs.ErrRunNotFound):
		s.respond(ctx, responseURL, fmt.Sprintf("No such run: %s. `/orch history` lists this channel's runs.", blocks.Echo(id)))
		return
	case err != nil:
		s.log.Warn("looking up a run's status", "run_id", id, "err", err)
		s.respond(ctx, responseURL, unavailableText)
		return
	}
	s.respond(ctx, responseURL, blocks.StatusText(run, s.mayAnswer(user, channel, run)))
}

func (s *Server) abort(ctx context.Context, id, user, reason, responseURL string) {
	if reason == "" {
		reason = "aborted from Slack"
	}
	run, err := escalation.Abort(ctx, s.cfg.Store, s.cfg.Queue, id, user, "slack", reason)
	switch {
	case errors.Is(err, jobs.ErrRunNotFound):
		s.respond(ctx, responseURL, fmt.Sprintf("Could not abort: no such run %s.", blocks.Echo(id)))
		return
	case errors.Is(err, escalation.ErrNoOpenEscalation), errors.Is(err, escalation.ErrAlreadyResolved),
		errors.Is(err, escalation.ErrInvalid):
		s.respond(ctx, responseURL, "Could not abort: "+safetext.Bound(err.Error(), maxErrorEcho))
		return
	case err != nil:
		s.log.Warn("aborting a run", "run_id", id, "err", err)
		s.respond(ctx, responseURL, unavailableText)
		return
	}
	s.respond(ctx, responseURL, blocks.AbortedReply(run))
}

// refused audits an attempt by someone not in ORCH_ALLOWED_USERS. The detail (what they typed) is bounded: the audit
// records the attempt, not whatever it carried.
func (s *Server) refused(user, what, detail string) {
	s.log.Warn("refused a Slack user", "user", user, "action", what)
	detail = blocks.Kept(detail, maxRefusalDetail)
	_ = s.jobs.submit(func(ctx context.Context) {
		if err := s.poster.auditRefusal(ctx, user, what, detail); err != nil {
			s.log.Warn("auditing a refusal", "err", err)
		}
	})
}
