// Package agent turns a task into an agent command line and the agent's output into a result.
package agent

import (
	"errors"
	"strconv"

	"github.com/orchrun/orch/quota"
)

// Request is one invocation of an agent on a task attempt.
type Request struct {
	RunID, TaskID string
	Attempt       int    // 1-based
	Prompt        string // built with BuildPrompt
	SessionID     string // a previous session to continue ("" = new)
	Workspace     string // working directory
	// Permissions is the policy and the people's decisions the agent works under (claude); nil for none.
	Permissions *HookState
	// ResumePaused resumes SessionID where it paused at a tool call, with no new prompt: the hook decides the call.
	ResumePaused bool
	// MaxBudgetUSD, when set, is what the invocation may spend before the CLI stops itself (claude: --max-budget-usd):
	// what is left of the run's budget.
	MaxBudgetUSD float64
}

// Command is what the sandbox runs.
type Command struct {
	Args []string // Args[0] is the program
	Env  []string // KEY=VALUE added to the sandbox's environment: always ORCH_RUN_ID, ORCH_TASK_ID, ORCH_ATTEMPT
	// Stdin is what the process reads on its standard input, byte for byte: the prompt, for every CLI that reads it
	// from there (an argument cannot hold a NUL byte nor more than MaxArgLen bytes). "" gives it no input at all.
	Stdin string
}

// Result is what the agent said.
type Result struct {
	Text      string // the final answer text (claude: the result line's "result"; else the assistant text; plain CLIs: stdout)
	SessionID string
	Success   bool // claude: a result line with subtype=="success" && is_error==false AND exit code 0; plain: exit 0
	Subtype   string
	Errors    []string // result "errors", assistant-line "error" fields, api_error_status, api_retry summaries

	InputTokens, OutputTokens, CacheReadTokens, CacheCreationTokens int64

	CostUSD  float64
	Model    string
	NumTurns int
	Unknown  int // count of line types not understood (kept, never fatal)

	// Version is the agent CLI's own version, when it says (claude: the init line's claude_code_version).
	Version string
	// StopReason is why the session stopped (claude: the result's stop_reason, e.g. "tool_deferred").
	StopReason string
	// Paused is the tool call the session paused at for a person's decision (claude: deferred_tool_use).
	Paused *Call
	// Denied are tool calls refused for want of a person's approval: the result's permission_denials and the calls
	// orch's hook refused with ApprovalMarker.
	Denied []Call
	// Limit is set when the attempt did not succeed because the agent hit a usage or rate limit that says when it
	// resets (claude: a rejected rate_limit_event, or the limit message in its result or error lines; every CLI:
	// quota.Parse over the end of its output and stderr). A run limited without a known reset leaves it nil, and a
	// successful run never has one, whatever warnings it saw.
	Limit *quota.Limit
}

// Parser consumes the agent's stdout one line at a time (a line may be megabytes) and yields the Result.
// Line does not keep line after it returns, so callers may reuse the buffer (bufio.Scanner does).
// A Parser is used by one goroutine and yields one Result.
type Parser interface {
	Line(line []byte)
	Finish(exitCode int, stderr []byte) Result
}

// Adapter knows one agent CLI.
type Adapter interface {
	Name() string
	Command(req Request) (Command, error)
	NewParser() Parser
}

var (
	_ Adapter = (*Claude)(nil)
	_ Adapter = (*Template)(nil)
	_ Adapter = (*Sim)(nil)
)

// errEmptyPrompt is returned by every adapter: an agent started without a prompt would either wait on stdin
// or run an empty turn and bill for it.
var errEmptyPrompt = errors.New("empty prompt")

// env is the environment every agent gets, so that scripts and the sim agent know where they are.
func env(req Request) []string {
	return []string{
		"ORCH_RUN_ID=" + req.RunID,
		"ORCH_TASK_ID=" + req.TaskID,
		"ORCH_ATTEMPT=" + strconv.Itoa(req.Attempt),
	}
}

// Output kept from an agent is bounded: a runaway process must not take the worker's memory with it, and the
// brain reads at most a few kilobytes anyway. A parser holds a bounded amount whatever lines it is given: the text,
// the errors, the identifiers and the calls it keeps are bounded here, and what it holds of one line (a result, a
// pretty-printed value being gathered) by the length of the lines it is given, which the sandbox bounds (4 MiB).
const (
	maxKeptText   = 1 << 20
	maxStderrKept = 2 << 10
	maxErrorLen   = 4 << 10
	// maxErrorsKept bounds the distinct errors kept: a CLI reports a handful, and an agent printing error lines in
	// a loop must not fill orch's memory with them. The rest are counted.
	maxErrorsKept = 64
	// maxIdentLen bounds an identifier kept from the output (a session, message or tool call id, a model name, a
	// version): real ones are tens of bytes, and a longer one is not one.
	maxIdentLen = 256
)

// ident is s when it can be an identifier, else "".
func ident(s string) string {
	if len(s) > maxIdentLen {
		return ""
	}
	return s
}
