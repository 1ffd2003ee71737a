// Package hub is orch on GitHub, a surface as the terminal, Slack and the web view are (runs.Surface): people start
// runs from issues, answer questions in comments, and steer pull requests orch opened, and orch answers where they
// asked.
//
// What is here so far: the webhook's verification (webhook.go: GitHub's X-Hub-Signature-256, checked before anything
// else is read); the grammar of the comments that talk to orch (command.go: "@orch <words>", an option's key, retry,
// abort, allow, allow for run, deny), turned into the same escalation.Request every surface resolves with; and the
// comments orch writes (comments.go: a run's status comment, a question and its answer), pure and golden-tested.
package hub
