// Package bot is orch's Slack front end, the incoming side: it verifies Slack's requests, routes them, acks each at
// once and does the work after the ack. What it shows is rendered by package blocks (bot/blocks); each run's thread
// and each person's Home tab are kept up to date by package mirror (bot/mirror).
//
// A request reaches the Server (server.go): verify.go bounds its body and checks its signature, replay.go that it was
// not received before; commands.go, events.go and interactions.go parse and route it and ack (socket.go does the same
// for Socket Mode envelopes). The work after the ack runs on bounded pools (internal/workpool), done by types that
// each hold what they use and none the Server:
//
//   - commands (commands.go, lookup.go): the slash commands. A new command is a case of commands.command with an ack
//     method beside ackRun, or a row of lookupCommands for one that only reads; its work is a method of commands,
//     and its answer is rendered in package blocks (reply.go for a line, lookup.go for blocks).
//   - answers (answers.go, modal.go, home.go): clicks on a question's buttons, in its thread or on a Home; the answer
//     form, opened and submitted; replies in a run's thread while a question is open.
//   - conversations (conversation.go): mentions of the bot, the message shortcut and requests in words.
//   - newRuns (start.go): starting a run within the limits on new runs (limits.go).
//   - talk (talk.go): what they share to answer people: response_url, ephemeral messages, refusals, the allowlist.
//
// A new message, or new words in one, belongs in package blocks; when something is posted in a run's thread, or what
// a Home shows, in package mirror.
package bot
