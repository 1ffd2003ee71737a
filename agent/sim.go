package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SimConfig configures the simulated agent.
type SimConfig struct {
	Binary   string // path of the orch executable, as the sandbox sees it
	Scenario string // path of the scenario file, as the sandbox sees it
}

// Sim runs the built-in simulated agent (`orch sim-agent`), a real process that plays a scenario and speaks
// Claude Code's stream-json, so that everything after the command line is exercised as with Claude.
type Sim struct {
	cfg SimConfig
}

// NewSim returns the sim adapter.
func NewSim(cfg SimConfig) *Sim { return &Sim{cfg: cfg} }

// Name implements Adapter.
func (s *Sim) Name() string { return "sim" }

// Command returns: BINARY sim-agent --scenario SCENARIO -p, with the prompt on standard input as for Claude Code.
// The task and attempt travel in the environment (ORCH_TASK_ID, ORCH_ATTEMPT), as they do for every agent.
func (s *Sim) Command(req Request) (Command, error) {
	switch {
	case s.cfg.Binary == "":
		return Command{}, errors.New("sim command: no orch binary to run sim-agent with")
	case s.cfg.Scenario == "":
		return Command{}, errors.New("sim command: no scenario file")
	case req.Prompt == "":
		return Command{}, fmt.Errorf("sim command: %w", errEmptyPrompt)
	}
	cmd := Command{Args: []string{s.cfg.Binary, "sim-agent", "--scenario", s.cfg.Scenario, "-p"}, Env: env(req),
		Stdin: req.Prompt}
	if err := checkCommand(cmd, ""); err != nil {
		return Command{}, fmt.Errorf("sim command: %w", err)
	}
	return cmd, nil
}

// NewParser implements Adapter: the sim speaks Claude Code's stream-json.
func (s *Sim) NewParser() Parser { return newClaudeParser() }

// simModel is the model name the sim reports, so that costs and logs show a simulated run for what it is.
const simModel = "orch-sim"

// shWaitDelay bounds how long a finished sh may keep its output open through a background child.
const shWaitDelay = 2 * time.Second

// PlaySim runs one sim invocation: it picks the reply for (taskID, attempt), writes its files into dir, runs
// its sh with /bin/sh -c in dir (the combined output is appended to the output text), appends a
// "GUIDANCE: <text>" line per human message of a conversation and per guidance item found in prompt (line
// breaks inside an item become spaces), and
// writes Claude-Code-compatible stream-json to w: system/init, one assistant message, and a result that
// reports success exactly when the reply's exit is 0. It returns the exit code the process must exit with.
// An error means nothing usable was written: no reply for the task, a file that cannot be written, sh that
// cannot be started or was cancelled.
func PlaySim(ctx context.Context, s *Scenario, taskID string, attempt int, prompt, dir string, w io.Writer) (exit int, err error) {
	start := time.Now()
	if s == nil {
		return 1, errors.New("sim: no scenario")
	}
	reply, ok := s.Reply(taskID, attempt)
	if !ok {
		return 1, fmt.Errorf("sim: the scenario has no reply for task %q and no default", taskID)
	}
	if err := writeSimFiles(dir, reply.Files); err != nil {
		return 1, err
	}
	parts := []string{strings.TrimRight(reply.Output, "\n")}
	if reply.Sh != "" {
		out, err := runSimSh(ctx, dir, reply.Sh)
		if err != nil {
			return 1, err
		}
		parts = append(parts, out)
	}
	// What a human said reaches the agent as guidance: given after an escalation, or as a message in a chat.
	var said []string
	for _, t := range ChatFromPrompt(prompt) {
		if t.Human {
			said = append(said, t.Text)
		}
	}
	for _, g := range append(said, GuidanceFromPrompt(prompt)...) {
		lines := strings.FieldsFunc(g, func(r rune) bool { return r == '\n' || r == '\r' })
		parts = append(parts, "GUIDANCE: "+strings.Join(lines, " "))
	}
	var text []string
	for _, p := range parts {
		if p != "" {
			text = append(text, p)
		}
	}
	t := strings.Join(text, "\n")

	var buf bytes.Buffer
	if err := writeSimStream(&buf, taskID, attempt, prompt, dir, t, reply.Exit, reply.CostUSD, time.Since(start)); err != nil {
		return 1, err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return 1, fmt.Errorf("sim: writing output: %w", err)
	}
	return reply.Exit, nil
}

// writeSimFiles writes through an os.Root, so a symlink in the workspace cannot carry a write outside it.
func writeSimFiles(dir string, files map[string]string) error {
	if len(files) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("sim: opening workspace: %w", err)
	}
	defer root.Close()
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if err := checkScenarioPath(path); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if d := filepath.Dir(path); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("sim: writing %s: %w", path, err)
			}
		}
		if err := root.WriteFile(path, []byte(files[path]), 0o644); err != nil {
			return fmt.Errorf("sim: writing %s: %w", path, err)
		}
	}
	return nil
}

// runSimSh runs a reply's sh. Its failure is part of the story the scenario tells (tests that fail), so
// it goes into the output; only not being able to run it at all is an error.
func runSimSh(ctx context.Context, dir, sh string) (string, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", sh)
	cmd.Dir = dir
	cmd.WaitDelay = shWaitDelay
	killGroupOnCancel(cmd)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("sim: running sh: %w", ctx.Err())
	}
	text := strings.TrimRight(string(out), "\n")
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
	case errors.As(err, &exitErr):
		if text != "" {
			text += "\n"
		}
		text += fmt.Sprintf("(sh exited with status %d)", exitErr.ExitCode())
	default:
		return "", fmt.Errorf("sim: running sh: %w", err)
	}
	return text, nil
}

// simID is a stable, uuid-shaped id: the sim must be repeatable, and the same task in the same workspace
// must keep its session across attempts, as a resumed Claude session does.
func simID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// simSessionID names the session after the task, so a person reading logs can tell which task it was.
func simSessionID(taskID, dir string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, taskID)
	if len(name) > 40 {
		name = name[:40]
	}
	return "sim-" + name + "-" + simID("session", taskID, dir)
}

type simUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func writeSimStream(w io.Writer, taskID string, attempt int, prompt, dir, text string, exit int, costUSD float64, elapsed time.Duration) error {
	sid := simSessionID(taskID, dir)
	att := fmt.Sprint(attempt)
	// Small and plausible: the size of the text at about four bytes a token, priced like a Sonnet model.
	u := simUsage{InputTokens: 3 + int64(len(prompt))/4, OutputTokens: 1 + int64(len(text))/4}
	cost := float64(u.InputTokens)*3e-6 + float64(u.OutputTokens)*15e-6
	if costUSD > 0 {
		cost = costUSD
	}
	ms := elapsed.Milliseconds()

	subtype, isError := "success", false
	if exit != 0 {
		subtype, isError = "error_during_execution", true
	}
	lines := []any{
		map[string]any{
			"type": "system", "subtype": "init", "cwd": dir, "session_id": sid,
			"tools": []string{"Bash", "Read", "Edit", "Write"}, "mcp_servers": []any{},
			"model": simModel, "permissionMode": "bypassPermissions", "apiKeySource": "none",
			"claude_code_version": simModel, "uuid": simID("init", sid, att),
		},
		map[string]any{
			"type": "assistant",
			"message": map[string]any{
				"model": simModel, "id": "msg_sim_" + simID("msg", sid, att)[:8], "type": "message", "role": "assistant",
				"content":     []any{map[string]any{"type": "text", "text": text}},
				"stop_reason": "end_turn", "stop_sequence": nil, "usage": u,
			},
			"parent_tool_use_id": nil, "session_id": sid, "uuid": simID("assistant", sid, att),
		},
		map[string]any{
			"type": "result", "subtype": subtype, "is_error": isError,
			"duration_ms": ms, "duration_api_ms": ms, "num_turns": 1,
			"result": text, "session_id": sid, "total_cost_usd": cost, "usage": u,
			"modelUsage": map[string]any{simModel: map[string]any{
				"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens,
				"cacheReadInputTokens": 0, "cacheCreationInputTokens": 0, "costUSD": cost,
			}},
			"permission_denials": []any{}, "uuid": simID("result", sid, att),
		},
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("sim: encoding output: %w", err)
		}
	}
	return nil
}
