// Package jobs is what a run is: runs, tasks, escalations and their states, the typed events of a run's log and
// the vocabulary of triggers, with no I/O; jobs/store keeps them, jobs/queue moves them.
//
// Where to change what: a new kind of event in events.go and what it says to people in describe.go (every surface
// renders an event from its Description; none switches over kinds); the words and counts about a run every surface
// uses in words.go; which status a run or a task may go to from which in transitions.go, and the moves themselves, with
// the events they record, in moves.go (the store refuses any other move as it saves).
package jobs

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ErrRunNotFound is returned for a run id nobody knows.
var ErrRunNotFound = errors.New("run not found")

// RunStatus is where a run is in its life.
type RunStatus string

const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunParked    RunStatus = "parked" // waiting for a human; holds no worker
	RunPaused    RunStatus = "paused" // stopped by orch (the brain was unavailable); `orch resume` continues it
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunAborted   RunStatus = "aborted"
)

// Terminal reports whether the run can no longer change.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunAborted
}

// TaskStatus is where a task is in its life.
type TaskStatus string

const (
	TaskPending   TaskStatus = "pending"
	TaskRunning   TaskStatus = "running"
	TaskWaiting   TaskStatus = "waiting" // an escalation about it is open
	TaskCompleted TaskStatus = "completed"
	TaskForced    TaskStatus = "forced" // marked done by a human despite its error
	TaskFailed    TaskStatus = "failed"
)

// Done reports whether the run may move past the task.
func (s TaskStatus) Done() bool { return s == TaskCompleted || s == TaskForced }

// Options are the choices a run was started with; every worker that touches the run uses them.
type Options struct {
	Agent       string `json:"agent"`
	AgentModel  string `json:"agent_model,omitempty"`
	SimScenario string `json:"sim_scenario,omitempty"`
	Brain       string `json:"brain"`
	BrainModel  string `json:"brain_model,omitempty"`
	Sandbox     string `json:"sandbox"`
	Image       string `json:"image,omitempty"`
	MaxAttempts int    `json:"max_attempts"`
	LLMOnly     bool   `json:"llm_only,omitempty"`
	// SimilarityThreshold is the error similarity (0..1] from which two failures count as the same failure for
	// loop detection; 0: the worker's (0.8 by default).
	SimilarityThreshold float64 `json:"similarity_threshold,omitempty"`
	// AgentTimeout bounds one agent invocation.
	AgentTimeout time.Duration `json:"agent_timeout"`
	// Escalation is how questions to humans behave.
	Escalation EscalationPolicy `json:"escalation,omitzero"`
	// MaxE2EFixAttempts bounds the end-to-end phase's fix attempts (0: DefaultMaxE2EFixAttempts).
	MaxE2EFixAttempts int `json:"max_e2e_fix_attempts,omitempty"`
	// Permissions is what the agent may do without asking (nil: the sandbox's defaults).
	Permissions *Permissions `json:"permissions,omitempty"`
	// Team names who the run's spend and worker time are counted for, when the person who started it said (`--team`);
	// "" leaves it to the run's origin (Run.Team).
	Team string `json:"team,omitempty"`
	// Budget bounds what the run may spend; the zero value bounds nothing.
	Budget Budget `json:"budget,omitzero"`
}

// DefaultMaxE2EFixAttempts is how many fix attempts the end-to-end phase makes before it asks a human.
const DefaultMaxE2EFixAttempts = 5

// E2EFixAttempts is the run's bound on fix attempts.
func (o Options) E2EFixAttempts() int {
	if o.MaxE2EFixAttempts > 0 {
		return o.MaxE2EFixAttempts
	}
	return DefaultMaxE2EFixAttempts
}

// EscalationPolicy is how a run's questions to humans behave. The zero value waits forever, five escalations a task.
type EscalationPolicy struct {
	// MaxPerTask stops an escalation loop: a task that needs a human this many times ends the run as failed.
	MaxPerTask int `json:"max_per_task,omitempty"`
	// Timeout is how long a question waits for an answer; 0 waits forever.
	Timeout time.Duration `json:"timeout,omitempty"`
	// TimeoutDefault takes the question's default choice (the recommended option) when it times out.
	TimeoutDefault bool `json:"timeout_default,omitempty"`
	// Reminders is how many timeouts are recorded (and reminded) before Fallback applies.
	Reminders int `json:"reminders,omitempty"`
	// Fallback after the reminders: "wait" (keep waiting, the default) or "abort".
	Fallback string `json:"fallback,omitempty"`
	// Triggers are the custom triggers: a pattern on the agent's output that needs a human.
	Triggers []CustomTrigger `json:"triggers,omitempty"`
}

// CustomTrigger asks a human whenever the agent's output matches Pattern.
type CustomTrigger struct {
	Name     string `json:"name" yaml:"name"`
	Pattern  string `json:"pattern" yaml:"pattern"` // a Go regular expression
	Priority int    `json:"priority" yaml:"priority"`
	Question string `json:"question,omitempty" yaml:"question"`
}

// Origin says who started the run and where to talk to them.
type Origin struct {
	Kind     string `json:"kind"` // "cli", "slack" or "github"
	User     string `json:"user,omitempty"`
	Channel  string `json:"channel,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
	// Repo ("owner/name") and Issue are where a run asked for on GitHub was asked: its issue, or its pull request.
	Repo  string `json:"repo,omitempty"`
	Issue int    `json:"issue,omitempty"`
}

// Team is who a run started from here is counted for, when no team was named: the Slack channel it was asked in, the
// GitHub repository, the person whose API token or web login started it. A run started from the terminal counts for
// no team unless it names one.
func (o Origin) Team() string {
	switch o.Kind {
	case "slack":
		return o.Channel
	case "github":
		return o.Repo
	case "api", "mcp", "web":
		return o.User
	}
	return ""
}

// Run is everything a worker needs to continue a run after any crash.
type Run struct {
	ID        string `json:"id"`
	PlanPath  string `json:"plan_path"`
	PlanTitle string `json:"plan_title"`
	Workspace string `json:"workspace"`
	// Git is the run's own branch and what is on it, when the workspace is a git repository (or the run clones one);
	// nil for a run that works in a plain directory.
	Git     *Git    `json:"git,omitempty"`
	Options Options `json:"options"`
	Origin  Origin  `json:"origin"`
	// Request is what a person asked for in their own words (`/orch do`, a mention of the bot), redacted and bounded;
	// "" for a run of a plan file. Such a run has one task, whose description is the request with its context.
	Request string `json:"request,omitempty"`
	// FollowUpOf is the run this one follows up (a mention in that run's thread after it ended), and FollowUps the
	// runs that follow this one up, oldest first: the link both ways.
	FollowUpOf string    `json:"follow_up_of,omitempty"`
	FollowUps  []string  `json:"follow_ups,omitempty"`
	Status     RunStatus `json:"status"`
	Tasks      []*Task   `json:"tasks"`
	// Graph is the DOT source of a pipeline run; "" for a markdown milestone, whose graph is its tasks in order.
	Graph string `json:"graph,omitempty"`
	// Pipeline is where the run is in its graph, saved with every transition: a crash or a park resumes exactly there.
	Pipeline *Checkpoint `json:"pipeline,omitempty"`
	// Cursor is the index of the task being worked on: the task of the pipeline's current node; len(Tasks) once the
	// run has ended.
	Cursor int `json:"cursor"`
	// RetryAt is when the current task's next attempt may start (a retry's backoff); zero for at once.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// E2E counts the end-to-end phase's failures (a milestone with a verification section).
	E2E E2E `json:"e2e,omitzero"`
	// Seq numbers the steps of the run: a step task carries the Seq it was enqueued for, so a redelivered or stale step
	// is recognised and does nothing.
	Seq int64 `json:"seq"`
	// EventSeq numbers the run's events: event n has the stream id "<created ms>-<n>", known before it is written,
	// so that an escalation can point at its own event in the log.
	EventSeq    int64         `json:"event_seq"`
	Escalations []*Escalation `json:"escalations,omitempty"`
	// Queued holds triggers that fired together with the open escalation: they are asked one at a time, highest
	// priority first.
	Queued []*Escalation `json:"queued,omitempty"`
	Reason string        `json:"reason,omitempty"`
	// Unfinished lists the tasks a person chose to leave undone when the run completed (a budget's "finish without the
	// rest").
	Unfinished []string `json:"unfinished,omitempty"`
	// Approved holds the permission rules people allowed for the rest of the run ("Allow for this run").
	Approved []string `json:"approved,omitempty"`
	// Waiting is the run that holds this run's plain workspace, while this run waits for it.
	Waiting string `json:"waiting,omitempty"`
	// PlanBrain is what the run's brain cost before any task ran: reading a plan whose headings name no tasks.
	PlanBrain BrainUsage `json:"plan_brain,omitzero"`
	// TeamStanding is where the run's team stood against its budget when the run's last attempt started, read in
	// the transaction that started it; nil when the team has no budget.
	TeamStanding *TeamStanding `json:"team_standing,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
	UpdatedAt    time.Time     `json:"updated_at"`
	EndedAt      time.Time     `json:"ended_at,omitzero"`
	Version      int64         `json:"version"`
}

// Git is a run's work product in a repository: its own branch, made from Base, and what the branch holds.
type Git struct {
	// Repo is the local repository of the workspace (its top directory), and Dir the workspace's place in it ("" for
	// the top); URL is instead the repository the run clones (--repo), on whichever worker runs it.
	Repo string `json:"repo,omitempty"`
	Dir  string `json:"dir,omitempty"`
	URL  string `json:"url,omitempty"`
	// Base is the ref the branch was made from, as the user gave it ("HEAD", "main", a commit), and BaseCommit the
	// commit it named when the run started.
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	Branch     string `json:"branch"` // orch/<run id>
	// Head is the branch's commit after the last step: a worker that picks the run up starts from it.
	Head string `json:"head,omitempty"`
	// Commits counts the commits on the branch since BaseCommit, the agent's own included; the rest is the diffstat
	// of the branch against BaseCommit.
	Commits      int `json:"commits,omitempty"`
	FilesChanged int `json:"files_changed,omitempty"`
	Insertions   int `json:"insertions,omitempty"`
	Deletions    int `json:"deletions,omitempty"`
	// Push is the remote the branch is pushed to after every committed task ("" for none), and Pushed the commit it
	// last got.
	Push   string `json:"push,omitempty"`
	Pushed string `json:"pushed,omitempty"`
	// Moving lists the commits that a step's owner was about to put on the branch (in the repository and on Push)
	// since Head was recorded: the branch may hold one of them when its owner died or lost the step before saving.
	// Only the step's current owner may move the branch from one of these; anything else there is someone else's.
	Moving []string `json:"moving,omitempty"`
	// PullRequest is the URL of the draft pull request opened for the run.
	PullRequest string `json:"pull_request,omitempty"`
	// Unfinished is a ref holding the work left uncommitted in the worktree of a run that did not complete.
	Unfinished string `json:"unfinished,omitempty"`
}

// BranchPrefix starts the name of every run's branch.
const BranchPrefix = "orch/"

// Task kinds: what a task's pipeline node does.
const (
	KindAgent = ""     // the agent works on it (a milestone task, a box node)
	KindGate  = "gate" // a human chooses the way on (a hexagon node)
	KindChat  = "chat" // the agent and a human converse until the human ends it (agent.mode="interactive")
	// A milestone's end-to-end phase: the agent runs the plan's verification; a failure goes to the fix task, which
	// goes back to the verification.
	KindVerify = "verify"
	KindFix    = "fix"
)

// IDs of a milestone's end-to-end tasks.
const (
	VerifyTaskID = "e2e"
	FixTaskID    = "e2e-fix"
)

// E2E is the state of a milestone's end-to-end phase: its failures since a human last looked.
type E2E struct {
	Failures int      `json:"failures,omitempty"`
	Errors   []string `json:"errors,omitempty"`
}

// Task is one task of a run with its attempt history. In a pipeline run each node that does work (an agent task, a
// human gate, an interactive chat) is a task whose id is the node's id.
type Task struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Kind        string     `json:"kind,omitempty"`
	Status      TaskStatus `json:"status"`
	// Timeout bounds one agent invocation of this task (a node's timeout attribute); 0: the run's agent timeout.
	// For a gate it is the question's time limit.
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxAttempts is the task's own attempt cap (a node's max_retries + 1); 0: the run's.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Backoff names the delay policy between retries (a node's backoff_policy); "": standard.
	Backoff string `json:"backoff,omitempty"`
	// Visits counts how often the pipeline entered the task's node; EnteredAt is when it last did.
	Visits    int       `json:"visits,omitempty"`
	EnteredAt time.Time `json:"entered_at,omitzero"`
	// Chat is the conversation of an interactive task's current visit, oldest turn first.
	Chat []Turn `json:"chat,omitempty"`
	// Started counts every start of the task in this run (retries and resumes included): ORCH_ATTEMPT.
	Started int `json:"started"`
	// Failures counts failed attempts since the attempt counter was last reset by a human; the attempt cap applies to it.
	Failures int `json:"failures"`
	// Errors holds the error of each failed attempt since the last reset, oldest first, for the loop detector.
	Errors []string `json:"errors,omitempty"`
	// Guidance is what humans said about this task, oldest first; every later attempt's prompt carries it.
	Guidance []string `json:"guidance,omitempty"`
	// RetryGuidance is the brain's advice for the next attempt.
	RetryGuidance string `json:"retry_guidance,omitempty"`
	SessionID     string `json:"session_id,omitempty"`
	// Commit is the commit that holds the task's work on the run's branch; "" when the task changed nothing or the run
	// has no branch.
	Commit   string     `json:"commit,omitempty"`
	Attempts []*Attempt `json:"attempts,omitempty"`
	// ExtraUSD is what people added to the run's per-task budget for this task ("extend").
	ExtraUSD float64 `json:"extra_usd,omitempty"`
	Summary  string  `json:"summary,omitempty"`
	// Pending is what the agent of the task's last attempt said, kept from the moment its process ended until the
	// attempt is settled: a delivery of the step that finds it (the worker died before the settlement, or the brain
	// was unavailable) judges it instead of running the agent again.
	Pending *Pending `json:"pending,omitempty"`
	// Paused is the tool call the task's agent session waits at for a person.
	Paused *Paused `json:"paused,omitempty"`
}

// Turn is one message of an interactive conversation.
type Turn struct {
	Role string    `json:"role"` // "agent" or "human"
	Text string    `json:"text"`
	By   string    `json:"by,omitempty"` // who wrote a human turn
	At   time.Time `json:"at"`
}

// Checkpoint is a pipeline run's position (attractor spec §5.3): the node being run, the nodes completed, their last
// outcomes and retry counters, and the context the nodes share.
type Checkpoint struct {
	// Current is the node being run, or the node the run stopped at.
	Current string `json:"current"`
	// Last is the node completed last.
	Last string `json:"last,omitempty"`
	// Completed lists the nodes completed so far, in order (the most recent MaxCompleted).
	Completed []string          `json:"completed,omitempty"`
	Outcomes  map[string]string `json:"outcomes,omitempty"` // node id → its last outcome status
	Retries   map[string]int    `json:"retries,omitempty"`  // node id → retries of its current visit
	// Visits counts the entries of each node since a human last had a say: what stops a pipeline that loops on
	// its own.
	Visits  map[string]int    `json:"visits,omitempty"`
	Context map[string]string `json:"context,omitempty"`
	SavedAt time.Time         `json:"saved_at,omitzero"`
}

// MaxCompleted bounds Checkpoint.Completed: a pipeline that loops for a day keeps its recent history only.
const MaxCompleted = 1000

// Pending is what the agent said on an attempt that is not settled yet, and what orch found in it as it came in.
type Pending struct {
	Text      string   `json:"text"`
	Success   bool     `json:"success"`
	Errors    []string `json:"errors,omitempty"`
	ExitCode  int      `json:"exit_code"`
	Signal    string   `json:"signal,omitempty"`
	Stderr    string   `json:"stderr,omitempty"`
	TimedOut  bool     `json:"timed_out,omitempty"`
	OOMKilled bool     `json:"oom_killed,omitempty"`
	// Secrets names the kinds of secret found in what the agent said (the text holds them redacted).
	Secrets []string `json:"secrets,omitempty"`
	// Paused is the tool call the agent stopped at for a person, when it did.
	Paused *Paused `json:"paused,omitempty"`
	// Tampered and Leaked are what examining the worktree after the agent found (worker.outcome): the git orch
	// trusts changed, the kinds of secret the work adds. A later delivery's own look cannot see a change made before it
	// came.
	Tampered []string `json:"tampered,omitempty"`
	Leaked   []string `json:"leaked,omitempty"`
	// Effects are the calls with effects beyond the worktree (a push, a deploy) that ran with a person's leave, each
	// said in a line with who let it through: running the task again may run them again, which a person decides.
	Effects []string `json:"effects,omitempty"`
	// Work is the git tree of the worktree's files as the agent left them (a run with a branch): a later delivery
	// judges the saved output only where the worktree still holds this work.
	Work string `json:"work,omitempty"`
}

// Attempt is one execution of a task.
type Attempt struct {
	N            int           `json:"n"`
	StartedAt    time.Time     `json:"started_at"`
	Duration     time.Duration `json:"duration"`
	ExitCode     int           `json:"exit_code"`
	Status       string        `json:"status"` // the brain's interpretation
	Summary      string        `json:"summary,omitempty"`
	Error        string        `json:"error,omitempty"`
	InputTokens  int64         `json:"input_tokens,omitempty"`
	OutputTokens int64         `json:"output_tokens,omitempty"`
	CostUSD      float64       `json:"cost_usd,omitempty"`
	Model        string        `json:"model,omitempty"`
	// Brain is what judging this attempt cost.
	Brain BrainUsage `json:"brain,omitzero"`
	// Reserved is what the attempt's start holds of its team's budget while it runs (an estimate of its cost); 0 once
	// it settled, or for a run whose team has no budget.
	Reserved float64 `json:"reserved_usd,omitempty"`
	// ReservedKey is the ledger (the period: "day:2026-11-29") the hold was taken from, where it is given back.
	ReservedKey string `json:"reserved_key,omitempty"`
	// Owner is the queue's id of the delivery of the step that runs the attempt: while that delivery lives, no other
	// delivery of the step starts another attempt.
	Owner string `json:"owner,omitempty"`
	// Delivery tells apart the handlings of Owner's task: a store that lost what it acknowledged has the queue hand a
	// task out again, under the same id, while the first handling still works. Each attempt's saves are fenced by
	// both.
	Delivery string `json:"delivery,omitempty"`
}

// BrainUsage is the cost of the brain's calls about one attempt.
type BrainUsage struct {
	Backend      string  `json:"backend,omitempty"`
	Model        string  `json:"model,omitempty"`
	Calls        int     `json:"calls,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// Add sums two usages (the backend and model of the newer one win).
func (u BrainUsage) Add(v BrainUsage) BrainUsage {
	u.Calls += v.Calls
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CostUSD += v.CostUSD
	if v.Backend != "" {
		u.Backend = v.Backend
	}
	if v.Model != "" {
		u.Model = v.Model
	}
	return u
}

// MaxTeamName bounds a team's name: it is a key in Redis, a Prometheus label and a line on every surface.
const MaxTeamName = 100

// CheckTeam says what is wrong with a team's name given by a person (--team, ORCH_TEAM): too long, or holding a
// control character (a newline would split the lines and labels it is written into); nil when it is fine.
func CheckTeam(name string) error {
	if len(name) > MaxTeamName {
		return fmt.Errorf("a team's name is at most %d bytes, this one %d", MaxTeamName, len(name))
	}
	for _, c := range name {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return fmt.Errorf("a team's name holds no control characters or invalid UTF-8 (found %q)", c)
		}
	}
	return nil
}

// Team is who the run's spend and worker time count for: the team it was started for, else its origin's; "" for none.
func (r *Run) Team() string {
	if r.Options.Team != "" {
		return r.Options.Team
	}
	return r.Origin.Team()
}

// ElapsedMS is how long the run lasted (to EndedAt, or to its last update), in milliseconds.
func (r *Run) ElapsedMS() int64 {
	end := r.EndedAt
	if end.IsZero() {
		end = r.UpdatedAt
	}
	return end.Sub(r.CreatedAt).Milliseconds()
}

// MaxAttempts is task t's attempt cap: its own, else the run's.
func (r *Run) MaxAttempts(t *Task) int {
	if t != nil && t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	return r.Options.MaxAttempts
}

// AgentTimeout bounds one agent invocation of task t.
func (r *Run) AgentTimeout(t *Task) time.Duration {
	if t != nil && t.Timeout > 0 {
		return t.Timeout
	}
	return r.Options.AgentTimeout
}

// Current is the task under the cursor, or nil once all tasks are done.
func (r *Run) Current() *Task {
	if r.Cursor < 0 || r.Cursor >= len(r.Tasks) {
		return nil
	}
	return r.Tasks[r.Cursor]
}

// Task finds a task by id.
func (r *Run) Task(id string) *Task {
	for _, t := range r.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// OpenEscalation is the escalation the run is parked on, or nil.
func (r *Run) OpenEscalation() *Escalation {
	for _, e := range r.Escalations {
		if e.Resolution == nil {
			return e
		}
	}
	return nil
}

// Escalation finds an escalation by id.
func (r *Run) Escalation(id string) *Escalation {
	for _, e := range r.Escalations {
		if e.ID == id {
			return e
		}
	}
	return nil
}

// Cost sums the cost and tokens of every attempt: the agent's and the brain's.
func (r *Run) Cost() (usd float64, in, out int64) {
	usd, in, out = r.PlanBrain.CostUSD, r.PlanBrain.InputTokens, r.PlanBrain.OutputTokens
	for _, t := range r.Tasks {
		for _, a := range t.Attempts {
			usd += a.CostUSD + a.Brain.CostUSD
			in += a.InputTokens + a.Brain.InputTokens
			out += a.OutputTokens + a.Brain.OutputTokens
		}
	}
	return usd, in, out
}

// Duration is how long the run has lasted so far, or lasted in all.
func (r *Run) Duration(now time.Time) time.Duration {
	end := now
	if !r.EndedAt.IsZero() {
		end = r.EndedAt
	}
	return end.Sub(r.CreatedAt)
}

// NewRunID returns a short id that is easy to type: "r-" and ten base32 characters.
func NewRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "r-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:10]
}
