// Package blocks renders what orch shows in Slack, as Block Kit and text within Slack's limits: pure functions of data
// in, a Message or a view out, which read no store, call no Slack and read no clock (whoever needs "now" passes it).
//
// A run's messages (its root message in the channel, the pointer to its thread, progress, paused, final, the word to
// its requester that it was stopped) are in run.go; a question, its buttons and its answered form in question.go, the
// buttons' action ids and values in actions.go; nudges in nudge.go; the Home tab in home.go (a new Home section is a
// part of HomeView, and what it needs a field of Home, read by package mirror's homes.go); the answer form, its
// private_metadata and the reading of a submission in modal.go; the answers of the lookup commands in lookup.go; the
// replies to commands, help included, in reply.go (a new slash command's words go there or in lookup.go). The pieces
// messages are made of (status lines, labels, durations, costs, people) are in pieces.go, the Block Kit helpers that
// hold Slack's limits in blocks.go, escaping and cutting in text.go.
//
// What people see is pinned by the golden files under testdata/golden; go test ./bot/blocks -run Golden -update
// rewrites them. Package blockstest checks Block Kit against Slack's limits for these tests and bot's.
package blocks
