// Command fakeclaude stands in for the claude CLI in tests. It has two modes.
//
// Replay mode (FAKE_CLAUDE_MODEL unset): it records its argv, working directory, ORCH_* environment and standard input
// (when that is not a terminal or a device: the prompt, as a real claude -p reads it there when no prompt argument is
// given — cli-reference, "Process piped content") as JSON in $FAKE_CLAUDE_ARGS, copies $FAKE_CLAUDE_TRANSCRIPT to stdout and $FAKE_CLAUDE_STDERR to stderr, and exits with
// $FAKE_CLAUDE_EXIT (default 0).
//
// Model mode (FAKE_CLAUDE_MODEL set to a JSON script or @file): it plays a scripted model inside an independent
// implementation of Claude Code's documented headless behaviour, running the tools for real, so a permission hook,
// approvals and resume can be tested end to end. The script is {"turns":[[step…]…]}: per user prompt of a session,
// the assistant messages in order, each {"tool","input","id"?}, {"tools":[…]} (several calls in one message) or
// {"text"} (the turn's end; {{last_result}} is the last tool result the model saw, {{prompt}} the last prompt). In a
// tool's input {{cwd}} is the working directory, which a real model knows from its system prompt. Each behaviour and
// where it comes from:
//
//   - `--version` prints "<version> (Claude Code)": cli-reference. Version $FAKE_CLAUDE_VERSION, default 2.1.186.
//   - Options as commander.js parses them (variadic --allowedTools, --disallowedTools, --mcp-config take the following
//     arguments up to the next option; `--` ends options); an unknown option prints "error: unknown option '<opt>'",
//     exit 1: cli-reference.
//   - stream-json with -p needs --verbose: "When using --print, --output-format=stream-json requires --verbose", exit 1
//     (captured from 2.0.62, reference 04 block A).
//   - `--resume` of an unknown id: "No conversation found with session ID: <id>", exit 1 (same capture). Resuming keeps
//     the session id (reference 04 block B, 2.1.288). Sessions live in $CLAUDE_CONFIG_DIR/projects/<cwd with every
//     non-alphanumeric character replaced by '-'>/<id>.jsonl (settings, "CLAUDE_CONFIG_DIR"; claude-directory).
//   - -p with no prompt: "Error: Input must be provided either through stdin or as a prompt argument when using
//     --print", exit 1 (headless). From 2.1.119 `-p --resume <id>` without a prompt and without a deferred call prints
//     "Error: No deferred tool marker found in the resumed session. ..." instead (vnovick/itervox issue #30, 2.1.126).
//   - stream-json lines (system/init, assistant per content block, user tool_result with tool_use_result, result)
//     shaped like agent/testdata/claude/02_stream_claude-2.1.63.jsonl; result keys as reference 04 block B lists.
//   - Settings: user $CLAUDE_CONFIG_DIR/settings.json, project .claude/settings.json, local .claude/settings.local.json,
//     --settings; rule lists merge across sources, single values (defaultMode) come from the highest source
//     (--settings > local > project > user), --permission-mode above all (settings, "Settings precedence").
//   - Rules: deny > ask > allow, first match wins; `Tool`, `Tool(specifier)`; Bash `prefix:*` and `*` wildcards
//     (" *" keeps a word boundary); compound commands (&&, ||, ;, |, newline) are split and every part must be
//     allowed, any part denied denies; Read/Edit gitignore-style paths: `//abs`, `~/`, `/` from the project root,
//     relative; Edit rules cover Write, MultiEdit, NotebookEdit; WebFetch(domain:x); mcp__server covers its tools; a
//     bare-name deny removes the tool from the model's tools (permissions). --allowedTools/--disallowedTools add rules
//     (cli-reference).
//   - Modes: read-only tools (Read, Glob, Grep, LS, NotebookRead, TodoWrite) need no approval; acceptEdits approves
//     file edits inside the working directory; bypassPermissions approves everything but deny/ask rules; dontAsk
//     denies what is not pre-approved with the message quoted in Ivy-Interactive/Ivy-Tendril issue #604; default and
//     plan ask (permissions, "Permission modes"). A call that would ask, in -p: with --permission-prompt-tool
//     mcp__srv__tool the MCP tool is called with {tool_name, input, tool_use_id} and answers {"behavior":"allow",
//     "updatedInput":…} or {"behavior":"deny","message":…} (cli-reference, iam); otherwise it is refused with
//     "Claude requested permissions to use X, but you haven't granted it yet." ("…to write to <path>…" for file
//     edits), listed in the result's permission_denials (anthropics/claude-code-action issue #20 and captures quoted
//     in many public parsers, 2.1.x). A deny rule answers "Permission to use X [with command C] has been denied.".
//   - PreToolUse hooks (hooks): matcher ""/"*" all, exact name, A|B, else a regular expression; run as `sh -c` in the
//     cwd with CLAUDE_PROJECT_DIR set, the documented stdin JSON (tool_use_id since 2.0.43), timeout in seconds
//     (default 60). Exit 0 + hookSpecificOutput.permissionDecision allow|deny|ask|defer with updatedInput; exit 2
//     blocks with "PreToolUse:<Tool> hook error: [<command>]: <stderr>" as the tool error (the prefix as public 2.1
//     captures show it); other codes are non-blocking. Several hooks: deny > defer > ask > allow. "allow" skips the
//     prompt but deny and ask rules still apply. AskUserQuestion needs "allow" with updatedInput.answers (hooks,
//     "AskUserQuestion"); without answers it asks like any call needing a person.
//   - defer (hooks, "Defer a tool call for later"; CHANGELOG 2.1.89): honoured only in -p and only when the assistant
//     message has exactly one tool_use, otherwise ignored (normal permission flow); before 2.1.89 not recognised
//     (normal flow). The process ends with a result of stop_reason "tool_deferred", result "", deferred_tool_use
//     {id, name, input}, exit 0. `-p --resume <id>` re-runs the hook for the same tool_use_id, then the call.
//   - AskUserQuestion: in init tools up to 2.1.186; from 2.1.187 plain -p offers it only with a permission prompt tool
//     (anthropics/claude-code issue #77994, reference 08 block A). A call to a tool not offered gets
//     "<tool_use_error>Error: No such tool available: X</tool_use_error>". The answer text is "User has answered your
//     questions: "Q"="A". You can now continue with the user's answers in mind." (reference 08 block C).
//   - Tool results: Bash "Exit code N\n<output>" as an error (tool_use_result "Error: …"); Read numbered "%6d\t"
//     lines (2.1.63 transcripts); Edit/Write on an existing file not read first: "File has not been read yet. Read it
//     first before writing to it."; Edit "String to replace not found in file." and "Found N matches of the string
//     to replace, but replace_all is false. …" (public transcripts, all wrapped in <tool_use_error>).
//
// Simplifications, named so nobody mistakes them for Claude Code: relative file paths are resolved against the cwd;
// Glob and Grep are simple; MCP servers are only stdio and only used for the permission prompt tool; --output-format
// text and json print the result only. A hook's JSON deny is listed in permission_denials, exit 2 is not (not
// verified against the real CLI). Anything else not modelled (interactive mode, --input-format stream-json, other
// tools) exits 99 with a message on stderr, as does a malformed FAKE_CLAUDE_MODEL.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Invocation is what fakeclaude records in $FAKE_CLAUDE_ARGS.
type Invocation struct {
	Args []string          `json:"args"`
	Dir  string            `json:"dir"`
	Env  map[string]string `json:"env"`
	// Stdin is what the process read on its standard input; absent when that was a terminal or a device (/dev/null).
	Stdin *string `json:"stdin,omitempty"`
}

func main() {
	if os.Getenv("FAKE_CLAUDE_MODEL") != "" {
		os.Exit(runModel(os.Args[1:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude:", err)
		os.Exit(99)
	}
}

// run is replay mode.
func run() error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	inv := Invocation{Args: os.Args[1:], Dir: dir, Env: map[string]string{}}
	if st, err := os.Stdin.Stat(); err == nil && st.Mode()&(os.ModeCharDevice|os.ModeDevice) == 0 {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
		in := string(data)
		inv.Stdin = &in
	}
	for _, k := range []string{"ORCH_RUN_ID", "ORCH_TASK_ID", "ORCH_ATTEMPT"} {
		if v, ok := os.LookupEnv(k); ok {
			inv.Env[k] = v
		}
	}
	if path := os.Getenv("FAKE_CLAUDE_ARGS"); path != "" {
		data, err := json.Marshal(inv)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	if path := os.Getenv("FAKE_CLAUDE_TRANSCRIPT"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(os.Stdout, f); err != nil {
			return err
		}
	}
	fmt.Fprint(os.Stderr, os.Getenv("FAKE_CLAUDE_STDERR"))
	code := 0
	if s := os.Getenv("FAKE_CLAUDE_EXIT"); s != "" {
		if code, err = strconv.Atoi(s); err != nil {
			return fmt.Errorf("FAKE_CLAUDE_EXIT: %w", err)
		}
	}
	os.Exit(code)
	return nil
}
