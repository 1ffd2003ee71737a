package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ClaudeConfig configures the Claude Code adapter. Its zero value runs "claude" with the CLI's default model.
type ClaudeConfig struct {
	Binary    string   // default "claude"
	Model     string   // "" = the CLI's default
	ExtraArgs []string // inserted before the prompt
	// Hook is the shell command that runs orch's PreToolUse hook (`orch claude-hook`) where the agent runs; "" when
	// orch cannot run there, and then the policy is passed as Claude Code's own rules alone.
	Hook string
	// PromptTool is the command (argv) that serves orch's permission prompt tool where the agent runs (`orch mcp
	// --permission-prompt`), given with the hook; nil for none.
	PromptTool []string
}

// Claude runs Claude Code headless and reads its stream-json output.
type Claude struct {
	cfg ClaudeConfig
}

// NewClaude returns the Claude Code adapter.
func NewClaude(cfg ClaudeConfig) *Claude {
	if cfg.Binary == "" {
		cfg.Binary = "claude"
	}
	cfg.ExtraArgs = append([]string(nil), cfg.ExtraArgs...)
	cfg.PromptTool = append([]string(nil), cfg.PromptTool...)
	return &Claude{cfg: cfg}
}

// Name implements Adapter.
func (c *Claude) Name() string { return "claude" }

// SubtypeMaxBudget is the subtype of the result of a session Claude Code stopped at --max-budget-usd
// ("Reached maximum budget ($0.5)").
const SubtypeMaxBudget = "error_max_budget_usd"

// Command returns: claude -p --output-format stream-json --verbose [--model M] [--resume SESSION]
// [--settings JSON [--permission-mode MODE] [--mcp-config JSON --permission-prompt-tool mcp__orch__approve]]
// [extra…] PROMPT, the documented command line, for a prompt an argument
// can hold; a longer one (or one no argument can carry) goes on standard input instead, with no prompt argument: with
// -p and no prompt argument Claude Code reads the prompt from stdin (code.claude.com/docs/en/cli-reference, "Process
// piped content"; "Error: Input must be provided either through stdin or as a prompt argument when using --print"
// otherwise), whatever its size. stream-json rather than json: it is one object per line, so output survives a killed process, and
// --print refuses stream-json without --verbose. With a permission policy, the settings carry orch's hook and
// rules, and the hook's state goes in the environment (HookEnv). A session paused at a deferred call is resumed
// with no prompt and nothing on stdin: the hook then decides the call again (code.claude.com/docs/en/hooks,
// "Defer a tool call for later", Claude Code 2.1.89+).
func (c *Claude) Command(req Request) (Command, error) {
	if req.Prompt == "" && !req.ResumePaused {
		return Command{}, fmt.Errorf("claude command: %w", errEmptyPrompt)
	}
	if req.ResumePaused && req.SessionID == "" {
		return Command{}, fmt.Errorf("claude command: resuming a paused call needs its session")
	}
	args := []string{c.cfg.Binary, "-p", "--output-format", "stream-json", "--verbose"}
	if c.cfg.Model != "" {
		args = append(args, "--model", c.cfg.Model)
	}
	if req.SessionID != "" {
		args = append(args, "--resume", req.SessionID)
	}
	if req.MaxBudgetUSD > 0 {
		// Claude Code stops the session once it spent this much (print mode only), with a result of subtype
		// error_max_budget_usd; it checks between turns, so a turn under way may take it a little past.
		args = append(args, "--max-budget-usd", strconv.FormatFloat(math.Ceil(req.MaxBudgetUSD*100)/100, 'f', 2, 64))
	}
	env := env(req)
	if st := req.Permissions; st != nil {
		settings, mode := settingsFor(*st, c.cfg.Hook)
		args = append(args, "--settings", string(settings))
		if mode != "default" {
			args = append(args, "--permission-mode", mode)
		}
		state, err := st.Encode()
		if err != nil {
			return Command{}, fmt.Errorf("claude command: encoding the permission state: %w", err)
		}
		env = append(env, HookEnv+"="+string(state))
		if c.cfg.Hook != "" && len(c.cfg.PromptTool) > 0 {
			// --mcp-config takes every argument up to the next option: the prompt tool's option comes after it.
			mcpConfig, err := promptConfig(c.cfg.PromptTool, state)
			if err != nil {
				return Command{}, fmt.Errorf("claude command: %w", err)
			}
			args = append(args, "--mcp-config", mcpConfig, "--permission-prompt-tool", PromptTool)
		}
	}
	args = append(args, c.cfg.ExtraArgs...)
	cmd := Command{Args: args, Env: env}
	inArgs := ""
	switch {
	case req.ResumePaused:
	case promptFitsArgument(req.Prompt):
		// The CLI's option parser takes a prompt such as "- [ ] fix it" for an unknown option and exits; "--" ends
		// the options. Only then, so the usual command line stays the documented one.
		if strings.HasPrefix(req.Prompt, "-") {
			cmd.Args = append(cmd.Args, "--")
		}
		cmd.Args, inArgs = append(cmd.Args, req.Prompt), req.Prompt
	default:
		cmd.Stdin = req.Prompt
	}
	if err := checkCommand(cmd, inArgs); err != nil {
		return Command{}, fmt.Errorf("claude command: %w", err)
	}
	return cmd, nil
}

// NewParser implements Adapter.
func (c *Claude) NewParser() Parser { return newClaudeParser() }
