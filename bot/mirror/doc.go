// Package mirror keeps Slack in step with orch's runs: the thread of each run started from Slack (its root message,
// progress, questions, answers, pauses and end, posted within Slack's pace), the nudges of questions left waiting, and
// the Home tab of each person who opened theirs lately. Its state lives in the store, so that a restarted bot carries
// on where the last one stopped: nothing posted twice, nothing lost.
//
// mirror.go is the Mirror, its Config, and what the incoming side asks of it: which run a thread is, whether a message
// is a question's, whether a view is someone's Home, links to threads, the keys seen. poster.go follows the runs and
// posts what their events mean for their threads; poster.event says which event gets which message, so a new kind of
// message in a thread starts there (its rendering in package blocks). pacer.go keeps Slack's pace per channel and per
// Home; nudge.go holds the reminders and the quiet hours; homes.go refreshes and publishes the Home tabs (a new Home
// section reads its data in homes.render and is rendered by blocks.HomeView); questions.go and allowlist.go say which
// questions a person may answer.
//
// Shutdown stops the poster after its pass, then drops the progress updates not sent yet, then stops the Home tabs'
// refreshes, whose Slack calls keep their turns until then.
package mirror
