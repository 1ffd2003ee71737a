package brain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/orchrun/orch/internal/backoff"
)

// ClaudeCLIConfig configures the brain that asks the Claude Code CLI. The zero value works when `claude` is
// on PATH and logged in.
type ClaudeCLIConfig struct {
	Binary string // default "claude", looked up on PATH
	Model  string // default DefaultModel
	// Timeout bounds one call (default 5 minutes): the CLI retries overloads itself, for minutes, before it
	// gives up, and orch would rather try again on its own terms.
	Timeout time.Duration
	// Env is added to orch's own environment for the process (which carries the login: HOME, the API key).
	Env []string
	// Dir is the working directory (default os.TempDir()): away from the workspace, so that its CLAUDE.md
	// and project settings do not enter a classifier's context.
	Dir string
	// MaxOutputBytes bounds the agent output in the interpret prompt (default 600 KB: Haiku's 200k tokens).
	MaxOutputBytes int
	// Sleep waits between tries; it must return ctx's error early when ctx is done. Tests record the waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ClaudeCLI is the LLM brain that runs `claude --print` once per question, with no tools and no saved
// session. It is safe for concurrent use.
type ClaudeCLI struct {
	cfg ClaudeCLIConfig
	j   judge
}

// NewClaudeCLI returns the CLI brain. Whether the CLI is installed is found out at the first call (or ahead
// of it with Available).
func NewClaudeCLI(cfg ClaudeCLIConfig) *ClaudeCLI {
	if cfg.Binary == "" {
		cfg.Binary = "claude"
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	if cfg.Sleep == nil {
		cfg.Sleep = backoff.Sleep
	}
	c := &ClaudeCLI{cfg: cfg}
	c.j = judge{via: viaClaude, maxOutput: cfg.MaxOutputBytes, send: c.send}
	return c
}

// Interpret judges an agent's output. Errors wrap ErrUnavailable, ErrInvalidReply or ctx's error; on error
// the Interpretation is zero but for Usage, which counts the calls that were made.
func (c *ClaudeCLI) Interpret(ctx context.Context, output string) (Interpretation, error) {
	return c.j.interpret(ctx, output)
}

// Decide chooses retry or escalate for a failed task; errors as for Interpret.
func (c *ClaudeCLI) Decide(ctx context.Context, in DecideInput) (Decision, error) {
	return c.j.decide(ctx, in)
}

// Tasks extracts the tasks of a plan; errors as for Interpret.
func (c *ClaudeCLI) Tasks(ctx context.Context, plan string) (TaskList, error) {
	return c.j.tasks(ctx, plan)
}

// args is the command line. The prompt goes on stdin: an agent's output can be megabytes, beyond what argv
// takes. --tools "" leaves the model no tools (the seed's --allowedTools "" only pre-approves none) and
// --strict-mcp-config, with no --mcp-config, keeps the user's MCP servers out too; --no-session-persistence
// leaves no session behind; --output-format json gives the reply with its usage and cost.
func (c *ClaudeCLI) args() []string {
	return []string{"--model", c.cfg.Model, "--print", "--no-session-persistence",
		"--output-format", "json", "--tools", "", "--strict-mcp-config"}
}

func (c *ClaudeCLI) send(ctx context.Context, conv []turn) (reply, error) {
	prompt := flatten(conv)
	return withRetry(ctx, "claude CLI", c.cfg.Sleep, func(ctx context.Context) (reply, error) {
		return c.once(ctx, prompt)
	})
}

// once runs the CLI and classifies the outcome: overloads and rate limits (is_error with api_error_status
// 429/529/5xx), crashes and timeouts may pass on another try; a missing binary or a refused login need a
// human; a request the API rejects (400, a prompt too long) would be rejected again.
func (c *ClaudeCLI) once(ctx context.Context, prompt string) (reply, error) {
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(callCtx, c.cfg.Binary, c.args()...)
	cmd.Stdin = strings.NewReader(prompt)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.Env = append(os.Environ(), c.cfg.Env...)
	cmd.Dir = c.cfg.Dir
	// A child that keeps the pipes open must not keep orch waiting after the kill.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return reply{}, ctx.Err()
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return reply{}, &tryError{kind: ErrUnavailable, cause: err,
			msg: fmt.Sprintf("claude CLI not found on PATH (%v): install Claude Code or choose another brain", err)}
	}
	if callCtx.Err() != nil {
		return reply{}, &tryError{retryable: true, cause: callCtx.Err(),
			msg: fmt.Sprintf("claude CLI: no answer within %s", c.cfg.Timeout)}
	}
	res, perr := parseCLIResult(stdout.Bytes())
	if perr != nil {
		why := perr.Error()
		if err != nil {
			why = err.Error()
			if s := strings.TrimSpace(stderr.String()); s != "" {
				why += ": " + truncate(collapse(s), 300)
			}
		}
		return reply{}, &tryError{retryable: true, cause: errors.Join(err, perr), msg: "claude CLI: " + why}
	}
	if res.IsError {
		return reply{}, res.classify()
	}
	return reply{text: res.Result, usage: res.usage(c.cfg.Model), cutOff: res.StopReason == "max_tokens"}, nil
}

// flatten writes a conversation as one prompt: the CLI without a saved session cannot continue one, so a
// corrective prompt carries the previous reply inline.
func flatten(conv []turn) string {
	if len(conv) == 1 {
		return conv[0].text
	}
	var b strings.Builder
	for i, t := range conv {
		switch {
		case i == 0:
			b.WriteString(t.text)
		case t.assistant:
			b.WriteString("\n\n--- Your previous reply ---\n" + t.text + "\n--- End of your previous reply ---")
		default:
			b.WriteString("\n\n" + t.text)
		}
	}
	return b.String()
}

// cliResult is the result object of `claude --print --output-format json`.
type cliResult struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	IsError        bool     `json:"is_error"`
	APIErrorStatus *int     `json:"api_error_status"`
	Result         string   `json:"result"`
	Errors         []any    `json:"errors"`
	StopReason     string   `json:"stop_reason"`
	TotalCostUSD   *float64 `json:"total_cost_usd"`
	Usage          *struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	} `json:"usage"`
	ModelUsage map[string]struct {
		InputTokens              int64   `json:"inputTokens"`
		OutputTokens             int64   `json:"outputTokens"`
		CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
		CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
		CostUSD                  float64 `json:"costUSD"`
	} `json:"modelUsage"`
}

// parseCLIResult finds the result in the CLI's stdout: one object, or (with verbose on in the user's
// settings) an array of every session message whose last "result" element is the answer. Text before the
// JSON (a warning printed to stdout) is skipped.
func parseCLIResult(out []byte) (*cliResult, error) {
	i := bytes.IndexAny(out, "{[")
	if i < 0 {
		if len(bytes.TrimSpace(out)) == 0 {
			return nil, errors.New("no output")
		}
		return nil, fmt.Errorf("no JSON in its output: %s", truncate(collapse(string(out)), 300))
	}
	dec := json.NewDecoder(bytes.NewReader(out[i:]))
	if out[i] == '{' {
		var r cliResult
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("reading its JSON output: %w", err)
		}
		if r.Type != "" && r.Type != "result" {
			return nil, fmt.Errorf("its output is a %q message, not a result", r.Type)
		}
		return &r, nil
	}
	var msgs []json.RawMessage
	if err := dec.Decode(&msgs); err != nil {
		return nil, fmt.Errorf("reading its JSON output: %w", err)
	}
	for k := len(msgs) - 1; k >= 0; k-- {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(msgs[k], &head) != nil || head.Type != "result" {
			continue
		}
		var r cliResult
		if err := json.Unmarshal(msgs[k], &r); err != nil {
			return nil, fmt.Errorf("reading its result: %w", err)
		}
		return &r, nil
	}
	return nil, fmt.Errorf("no result among the %d messages of its output", len(msgs))
}

// classify says what an is_error result means for the next try.
func (r *cliResult) classify() *tryError {
	status := 0
	if r.APIErrorStatus != nil {
		status = *r.APIErrorStatus
	}
	what := strings.TrimSpace(r.Result)
	if what == "" && len(r.Errors) > 0 {
		parts := make([]string, len(r.Errors))
		for i, e := range r.Errors {
			parts[i] = fmt.Sprint(e)
		}
		what = strings.Join(parts, "; ")
	}
	if what == "" {
		what = r.Subtype
	}
	msg := "claude CLI: "
	if status != 0 {
		msg += fmt.Sprintf("API error %d: ", status)
	}
	msg += truncate(collapse(what), 300)
	te := &tryError{msg: msg, kind: ErrUnavailable}
	lower := strings.ToLower(what)
	switch {
	case status == 401 || status == 403 || strings.Contains(lower, "not logged in") ||
		strings.Contains(lower, "invalid api key") || strings.Contains(lower, "/login"):
		te.msg += " (not retried)"
	case status == 400 || status == 413 || strings.Contains(lower, "prompt is too long"):
		te.kind = ErrInvalidReply
		te.tooLong = status == 413 || strings.Contains(lower, "too long")
		te.msg += " (the request was rejected: not retried)"
	default:
		// 429, 529, 5xx, and errors without a status (an interrupted run): another try may pass.
		te.retryable = true
	}
	return te
}

// usage reads the tokens and cost the CLI reports; the cost is the CLI's own figure when it gives one.
func (r *cliResult) usage(model string) Usage {
	u := Usage{Backend: viaClaude, Model: model, Calls: 1}
	var in, write, read, out int64
	switch {
	case r.Usage != nil:
		in, write, read, out = r.Usage.InputTokens, r.Usage.CacheCreationInputTokens, r.Usage.CacheReadInputTokens, r.Usage.OutputTokens
	default:
		for _, m := range r.ModelUsage {
			in, write, read, out = in+m.InputTokens, write+m.CacheCreationInputTokens, read+m.CacheReadInputTokens, out+m.OutputTokens
		}
	}
	u.InputTokens, u.OutputTokens = in+write+read, out
	if r.TotalCostUSD != nil {
		u.CostUSD = *r.TotalCostUSD
	} else {
		u.CostUSD, _ = estimateCost(model, in, write, read, out)
	}
	return u
}

// tailBuffer keeps the last max bytes written to it: enough of stderr to say why a process failed.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
