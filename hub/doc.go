// Package hub is orch on GitHub, a surface as the terminal, Slack and the web view are (runs.Surface): people start
// runs from issues, answer questions in comments, and steer the pull requests orch opened, and orch answers where they
// asked.
//
// The webhook (server.go, webhook.go) checks GitHub's X-Hub-Signature-256 before it reads anything of a delivery,
// answers at once and leaves the work to a pool. The desk (desk.go) does what a delivery asks: a command in an issue
// (command.go's grammar, turned into the escalation.Request every surface resolves with) starts or answers a run; on a
// pull request orch opened (pulls.go) a command, a review (review.go: a task per thread, each thread answered when
// the run ends) or a red check (checks.go: a fix run, with the loop's two stops) is a run that goes on with the pull
// request's branch. The mirror (mirror.go) keeps each run's status comment, question comments and thread replies up
// to date; the comments themselves (comments.go) are pure and golden-tested.
package hub
