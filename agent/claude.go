package agent

import (
	"fmt"
	"strings"
)

// ClaudeConfig configures the Claude Code adapter. Its zero value runs "claude" with the CLI's default model.
type ClaudeConfig struct {
	Binary    string   // default "claude"
	Model     string   // "" = the CLI's default
	ExtraArgs []string // inserted before the prompt
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
	return &Claude{cfg: cfg}
}

// Name implements Adapter.
func (c *Claude) Name() string { return "claude" }

// Command returns: claude -p --output-format stream-json --verbose [--model M] [--resume SESSION] [extra…] PROMPT.
// stream-json rather than json: it is one object per line, so output survives a killed process, and
// --print refuses stream-json without --verbose.
func (c *Claude) Command(req Request) (Command, error) {
	if req.Prompt == "" {
		return Command{}, fmt.Errorf("claude command: %w", errEmptyPrompt)
	}
	args := []string{c.cfg.Binary, "-p", "--output-format", "stream-json", "--verbose"}
	if c.cfg.Model != "" {
		args = append(args, "--model", c.cfg.Model)
	}
	if req.SessionID != "" {
		args = append(args, "--resume", req.SessionID)
	}
	args = append(args, c.cfg.ExtraArgs...)
	// The CLI's option parser takes a prompt such as "- [ ] fix it" for an unknown option and exits;
	// "--" ends the options. Only then, so the usual command line stays the documented one.
	if strings.HasPrefix(req.Prompt, "-") {
		args = append(args, "--")
	}
	args = append(args, req.Prompt)
	return Command{Args: args, Env: env(req)}, nil
}

// NewParser implements Adapter.
func (c *Claude) NewParser() Parser { return newClaudeParser() }
