package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// builtinTools is the init tools list of 2.1.63 (02_stream_claude-2.1.63.jsonl).
var builtinTools = []string{"Agent", "TaskOutput", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write",
	"NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "TaskStop", "AskUserQuestion", "Skill", "EnterPlanMode"}

// readOnlyTools need no approval (permissions, "Permission system").
var readOnlyTools = []string{"Read", "Glob", "Grep", "LS", "NotebookRead", "TodoWrite"}

// editTools are covered by Edit rules (permissions, "Read and Edit").
var editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}

// dontAskMessage is the refusal of dontAsk mode (quoted in Ivy-Interactive/Ivy-Tendril issue #604).
const dontAskMessage = "Permission to use %s has been denied because Claude Code is running in don't ask mode. IMPORTANT: You *may* attempt to accomplish this action using other tools that might naturally be used to accomplish this goal, e.g. using head instead of cat. But you *should not* attempt to work around this denial in malicious ways, e.g. do not use your ability to run tests to execute non-test actions. You should only try to work around this restriction in reasonable ways that do not attempt to bypass the intent behind this denial. If you believe this capability is essential to complete the user's request, STOP and explain to the user what you were trying to do and why you need this permission. Let the user decide how to proceed."

// offeredTools is the tools list the model gets: built-ins and MCP tools, without tools a bare deny rule removes and
// without AskUserQuestion where 2.1.187+ hides it.
func (c *claude) offeredTools() []string {
	var tools []string
	for _, t := range builtinTools {
		if t == "AskUserQuestion" && versionAtLeast(c.version, "2.1.187") && c.opts.promptTool == "" {
			continue
		}
		tools = append(tools, t)
	}
	for _, m := range c.mcp {
		tools = append(tools, m.tools...)
	}
	return slices.DeleteFunc(tools, func(t string) bool {
		for _, r := range c.settings.deny {
			if name, spec := parseRule(r); spec == "" && (name == t || strings.HasPrefix(t, name+"__") && strings.HasPrefix(name, "mcp__")) {
				return true
			}
		}
		return false
	})
}

// outcome is what the permission flow decided about one call.
type outcome struct {
	run      bool
	deferred bool
	denied   bool // listed in permission_denials
	message  string
	input    json.RawMessage
}

// decide runs the permission flow for one call of a message with batch tool_use blocks.
func (c *claude) decide(call toolCall, batch int) (outcome, error) {
	if !slices.Contains(c.tools, call.Name) {
		return outcome{message: "<tool_use_error>Error: No such tool available: " + call.Name + "</tool_use_error>"}, nil
	}
	var input map[string]any
	if err := json.Unmarshal(call.Input, &input); err != nil {
		return outcome{}, fmt.Errorf("FAKE_CLAUDE_MODEL: the input of %s is not a JSON object: %w", call.Name, err)
	}
	hook := c.runHooks(call, batch)
	c.log.Hooks = append(c.log.Hooks, logHook{ToolUseID: call.ID, Tool: call.Name, Decision: hook.decision})
	if len(hook.updatedInput) > 0 {
		call.Input = hook.updatedInput
		json.Unmarshal(call.Input, &input)
	}
	switch hook.decision {
	case "block":
		return outcome{message: hook.reason}, nil
	case "deny":
		reason := hook.reason
		if reason == "" {
			reason = "Blocked by hook"
		}
		return outcome{denied: true, message: reason}, nil
	case "defer":
		return outcome{deferred: true}, nil
	}
	rule := c.matchRules(call.Name, input)
	if rule == "deny" {
		msg := "Permission to use " + call.Name + " has been denied."
		if cmd, ok := input["command"].(string); ok && call.Name == "Bash" {
			msg = "Permission to use Bash with command " + cmd + " has been denied."
		}
		return outcome{denied: true, message: msg}, nil
	}
	needsPerson := call.Name == "AskUserQuestion" && input["answers"] == nil
	allowed := !needsPerson && rule != "ask" && hook.decision != "ask" && (hook.decision == "allow" || rule == "allow" || c.modeAllows(call.Name, input))
	if allowed {
		return outcome{run: true, input: call.Input}, nil
	}
	if c.settings.mode == "dontAsk" {
		return outcome{denied: true, message: fmt.Sprintf(dontAskMessage, call.Name)}, nil
	}
	return c.ask(call, input)
}

// modeAllows reports whether the permission mode approves a call no rule decided.
func (c *claude) modeAllows(tool string, input map[string]any) bool {
	if slices.Contains(readOnlyTools, tool) {
		return true
	}
	switch c.settings.mode {
	case "bypassPermissions":
		return true
	case "acceptEdits":
		if slices.Contains(editTools, tool) {
			p := c.absPath(filePathOf(input))
			return p == c.cwd || strings.HasPrefix(p, c.cwd+string(filepath.Separator))
		}
	}
	return false
}

// ask handles a call that needs a person in -p: the permission prompt tool, or a refusal.
func (c *claude) ask(call toolCall, input map[string]any) (outcome, error) {
	if c.opts.promptTool == "" {
		msg := "Claude requested permissions to use " + call.Name + ", but you haven't granted it yet."
		if slices.Contains(editTools, call.Name) {
			msg = "Claude requested permissions to write to " + c.absPath(filePathOf(input)) + ", but you haven't granted it yet."
		}
		return outcome{denied: true, message: msg}, nil
	}
	reply, err := c.callPromptTool(call)
	if err != nil {
		return outcome{}, err
	}
	var answer struct {
		Behavior     string          `json:"behavior"`
		UpdatedInput json.RawMessage `json:"updatedInput"`
		Message      string          `json:"message"`
	}
	if err := json.Unmarshal([]byte(reply), &answer); err != nil {
		return outcome{}, fmt.Errorf("the permission prompt tool answered %q, not JSON: %w", reply, err)
	}
	switch answer.Behavior {
	case "allow":
		in := call.Input
		if len(answer.UpdatedInput) > 0 && string(answer.UpdatedInput) != "null" {
			in = answer.UpdatedInput
		}
		return outcome{run: true, input: in}, nil
	case "deny":
		return outcome{denied: true, message: answer.Message}, nil
	}
	return outcome{}, fmt.Errorf("the permission prompt tool answered behavior %q", answer.Behavior)
}

// hookResult is the combined answer of the PreToolUse hooks for one call.
type hookResult struct {
	decision     string // "" (none), allow, deny, ask, defer, or block (exit 2)
	reason       string
	updatedInput json.RawMessage
}

// hookMatches reports whether a PreToolUse matcher selects tool (hooks, "Matcher patterns").
func hookMatches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" || matcher == tool {
		return true
	}
	if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(matcher) {
		return slices.Contains(strings.Split(matcher, "|"), tool)
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	return err == nil && re.MatchString(tool)
}

// runHooks runs every matching PreToolUse hook and combines their decisions: block and deny > defer > ask > allow.
func (c *claude) runHooks(call toolCall, batch int) hookResult {
	rank := map[string]int{"": 0, "allow": 1, "ask": 2, "defer": 3, "deny": 4, "block": 5}
	var best hookResult
	stdin, _ := json.Marshal(map[string]any{"session_id": c.sessionID, "transcript_path": c.path, "cwd": c.cwd,
		"permission_mode": c.settings.mode, "hook_event_name": "PreToolUse", "tool_name": call.Name,
		"tool_input": call.Input, "tool_use_id": call.ID})
	for _, m := range c.settings.preToolUse {
		if !hookMatches(m.Matcher, call.Name) {
			continue
		}
		for _, h := range m.Hooks {
			if h.Type != "command" {
				continue
			}
			r := c.runHook(h, call.Name, stdin)
			if r.decision == "defer" && (!versionAtLeast(c.version, "2.1.89") || batch != 1) {
				// ignored "with a warning" that goes to the debug log, not stderr
				r.decision = ""
			}
			if rank[r.decision] > rank[best.decision] || len(best.updatedInput) == 0 && len(r.updatedInput) > 0 && rank[r.decision] == rank[best.decision] {
				best = r
			}
		}
	}
	return best
}

// runHook runs one hook command.
func (c *claude) runHook(h hookCommand, tool string, stdin []byte) hookResult {
	timeout := 60 * time.Second
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Dir = c.cwd
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+c.cwd)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return hookResult{} // a timed-out hook is a non-blocking error
	}
	if err != nil {
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2 {
			return hookResult{decision: "block", reason: fmt.Sprintf("PreToolUse:%s hook error: [%s]: %s", tool, h.Command, strings.TrimSpace(stderr.String()))}
		}
		return hookResult{}
	}
	var out struct {
		HookSpecificOutput struct {
			HookEventName            string          `json:"hookEventName"`
			PermissionDecision       string          `json:"permissionDecision"`
			PermissionDecisionReason string          `json:"permissionDecisionReason"`
			UpdatedInput             json.RawMessage `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out) != nil {
		return hookResult{}
	}
	d := out.HookSpecificOutput
	switch d.PermissionDecision {
	case "allow", "deny", "ask", "defer":
	default:
		d.PermissionDecision = ""
	}
	r := hookResult{decision: d.PermissionDecision, reason: d.PermissionDecisionReason}
	if d.PermissionDecision == "allow" || d.PermissionDecision == "ask" {
		r.updatedInput = d.UpdatedInput
	}
	return r
}

// parseRule splits "Tool(spec)" into its tool and specifier.
func parseRule(r string) (tool, spec string) {
	r = strings.TrimSpace(r)
	if i := strings.IndexByte(r, '('); i > 0 && strings.HasSuffix(r, ")") {
		return r[:i], r[i+1 : len(r)-1]
	}
	return r, ""
}

// matchRules returns "deny", "ask", "allow" or "" for a call: deny first, then ask, then allow.
func (c *claude) matchRules(tool string, input map[string]any) string {
	for _, kind := range []struct {
		name  string
		rules []string
	}{{"deny", c.settings.deny}, {"ask", c.settings.ask}, {"allow", c.settings.allow}} {
		if tool == "Bash" {
			cmd, _ := input["command"].(string)
			parts := splitCompound(cmd)
			matched := 0
			for _, p := range parts {
				if slices.ContainsFunc(kind.rules, func(r string) bool { return c.ruleMatches(r, tool, p, input) }) {
					matched++
				}
			}
			if kind.name != "allow" && matched > 0 || kind.name == "allow" && len(parts) > 0 && matched == len(parts) {
				return kind.name
			}
			continue
		}
		if slices.ContainsFunc(kind.rules, func(r string) bool { return c.ruleMatches(r, tool, "", input) }) {
			return kind.name
		}
	}
	return ""
}

// ruleMatches reports whether rule r covers a call of tool; cmd is one Bash subcommand.
func (c *claude) ruleMatches(r, tool, cmd string, input map[string]any) bool {
	name, spec := parseRule(r)
	switch {
	case name == tool:
	case name == "Edit" && slices.Contains(editTools, tool):
	case strings.HasPrefix(name, "mcp__") && strings.HasPrefix(tool, name+"__"):
		return spec == ""
	case strings.HasPrefix(name, "mcp__") && strings.HasSuffix(name, "__*") && strings.HasPrefix(tool, strings.TrimSuffix(name, "*")):
		return true
	default:
		return false
	}
	if spec == "" || spec == "*" {
		return true
	}
	switch {
	case tool == "Bash":
		return bashMatches(spec, cmd)
	case name == "Read" || name == "Edit":
		return c.pathMatches(spec, c.absPath(filePathOf(input)))
	case tool == "WebFetch" && strings.HasPrefix(spec, "domain:"):
		u, err := url.Parse(fmt.Sprint(input["url"]))
		return err == nil && u.Hostname() == strings.TrimPrefix(spec, "domain:")
	}
	return false
}

// bashMatches matches one Bash specifier: `prefix:*`, `*` wildcards, or the exact command.
func bashMatches(spec, cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	if !strings.Contains(spec, "*") {
		return cmd == spec
	}
	if base, ok := strings.CutSuffix(spec, " *"); ok && !strings.Contains(base, "*") && cmd == base {
		return true
	}
	var re strings.Builder
	for i, part := range strings.Split(spec, "*") {
		if i > 0 {
			re.WriteString(".*")
		}
		re.WriteString(regexp.QuoteMeta(part))
	}
	return regexp.MustCompile("^(?s:" + re.String() + ")$").MatchString(cmd)
}

// splitCompound splits a shell command on &&, ||, ;, | and newlines outside quotes.
func splitCompound(cmd string) []string {
	var parts []string
	var cur strings.Builder
	var quote rune
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			parts = append(parts, s)
		}
		cur.Reset()
	}
	rs := []rune(cmd)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == ';' || r == '\n' || r == '|' || r == '&' && i+1 < len(rs) && rs[i+1] == '&':
			if (r == '|' || r == '&') && i+1 < len(rs) && rs[i+1] == r {
				i++
			}
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return parts
}

// pathMatches matches a gitignore-style Read/Edit specifier against an absolute path (permissions, "Read and Edit").
func (c *claude) pathMatches(spec, path string) bool {
	home, _ := os.UserHomeDir()
	var pattern string
	anchored := true
	switch {
	case strings.HasPrefix(spec, "//"):
		pattern = spec[1:]
	case strings.HasPrefix(spec, "~/"):
		pattern = filepath.Join(home, spec[2:])
	case strings.HasPrefix(spec, "/"):
		pattern = filepath.Join(c.cwd, spec[1:])
	default:
		rel := strings.TrimPrefix(spec, "./")
		anchored = strings.HasPrefix(spec, "./") || strings.Contains(strings.TrimSuffix(rel, "/"), "/")
		pattern = filepath.Join(c.cwd, rel)
	}
	re := globRegexp(pattern)
	for p := path; ; p = filepath.Dir(p) {
		if re.MatchString(p) {
			return true
		}
		if !anchored && strings.HasPrefix(p, c.cwd) {
			base := globRegexp(filepath.Join(filepath.Dir(p), filepath.Base(pattern)))
			if base.MatchString(p) {
				return true
			}
		}
		if p == filepath.Dir(p) {
			return false
		}
	}
}

// globRegexp turns a glob (** crosses directories, * and ? do not) into an anchored regexp.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case glob[i] == '*':
			b.WriteString("[^/]*")
		case glob[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	return regexp.MustCompile("^" + b.String() + "$")
}

// filePathOf is the path a file tool's input names.
func filePathOf(input map[string]any) string {
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if s, ok := input[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// absPath resolves p against the working directory.
func (c *claude) absPath(p string) string {
	if p == "" {
		return c.cwd
	}
	if strings.HasPrefix(p, "~/") {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, p[2:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.cwd, p)
	}
	return filepath.Clean(p)
}
