package bot

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// RunSocketMode serves Slack over Socket Mode (SLACK_APP_TOKEN): the same handlers as the HTTP endpoints, each
// envelope acked at once and its work done after. It returns when ctx ends or the connection fails for good.
func (s *Server) RunSocketMode(ctx context.Context) error {
	if s.cfg.AppToken == "" {
		return fmt.Errorf("socket mode needs SLACK_APP_TOKEN")
	}
	client := socketmode.New(s.api)
	errc := make(chan error, 1)
	go func() { errc <- client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("socket mode: %w", err)
		case ev, ok := <-client.Events:
			if !ok {
				return nil
			}
			s.socketEvent(client, ev)
		}
	}
}

// socketEvent handles an envelope. Envelopes carry no signature, but an envelope delivered twice (Slack sends again one
// it did not see acked) is handled once, by its envelope_id: the second is acked and nothing is done.
func (s *Server) socketEvent(client *socketmode.Client, ev socketmode.Event) {
	unsee := func() {}
	switch ev.Type {
	case socketmode.EventTypeSlashCommand, socketmode.EventTypeInteractive, socketmode.EventTypeEventsAPI:
		if ev.Request == nil || ev.Request.EnvelopeID == "" {
			break
		}
		var first bool
		if first, unsee = s.replays.seenOnce(context.Background(), envelopeKey(ev.Request.EnvelopeID)); !first {
			s.log.Info("socket mode: an envelope delivered again; acknowledged, nothing done", "type", ev.Type)
			s.ack(client, ev.Request, nil)
			return
		}
	}
	switch ev.Type {
	case socketmode.EventTypeSlashCommand:
		s.socketCommand(client, ev)
	case socketmode.EventTypeInteractive:
		s.socketInteractive(client, ev)
	case socketmode.EventTypeEventsAPI:
		e, ok := ev.Data.(slackevents.EventsAPIEvent)
		if !ok || ev.Request == nil {
			return
		}
		if err := s.event(e); err != nil {
			unsee()
			return // not acked: Slack delivers it again
		}
		s.ack(client, ev.Request, nil)
	case socketmode.EventTypeInvalidAuth:
		s.log.Error("socket mode: Slack rejected SLACK_APP_TOKEN")
	case socketmode.EventTypeConnectionError:
		s.log.Warn("socket mode: connection error; reconnecting", "err", ev.Data)
	}
}

// socketCommand acks a slash command's envelope with the command's answer.
func (s *Server) socketCommand(client *socketmode.Client, ev socketmode.Event) {
	sc, ok := ev.Data.(slack.SlashCommand)
	if !ok || ev.Request == nil {
		return
	}
	text, err := s.commands.command(command{Text: unescapeSlack(sc.Text), UserID: sc.UserID, ChannelID: sc.ChannelID,
		ResponseURL: sc.ResponseURL, TeamID: sc.TeamID})
	if err != nil {
		text = err.Error()
	}
	s.ack(client, ev.Request, map[string]string{"response_type": "ephemeral", "text": replyText(text)})
}

// socketInteractive acks an interaction's envelope: a click at once, a form's submission once it is resolved.
func (s *Server) socketInteractive(client *socketmode.Client, ev socketmode.Event) {
	cb, ok := ev.Data.(slack.InteractionCallback)
	if !ok || ev.Request == nil {
		return
	}
	if cb.Type == slack.InteractionTypeViewSubmission {
		s.socketSubmission(client, ev.Request, cb) // acked with the response: its errors must be in the ack
		return
	}
	if err := s.interaction(cb); err != nil {
		s.ack(client, ev.Request, map[string]string{"response_type": "ephemeral", "text": replyText(err.Error())})
		return
	}
	s.ack(client, ev.Request, nil)
}

func (s *Server) ack(client *socketmode.Client, req *socketmode.Request, payload any) {
	var err error
	if payload == nil {
		err = client.Ack(*req)
	} else {
		err = client.Ack(*req, payload)
	}
	if err != nil {
		s.log.Warn("socket mode: ack failed", "err", err)
	}
}
