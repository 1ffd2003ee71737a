package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// options are the command-line options model mode understands.
type options struct {
	version        bool
	print          bool
	outputFormat   string
	verbose        bool
	model          string
	resume         string
	settings       string
	permissionMode string
	promptTool     string
	mcpConfigs     []string
	allowed        []string
	disallowed     []string
	prompt         string
	hasPrompt      bool
}

// usageError is a command-line error the real CLI reports on stderr with exit 1.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// unmodelled is something the fake does not implement: it exits 99.
type unmodelled struct{ msg string }

func (e unmodelled) Error() string { return e.msg }

// knownButUnmodelled are real Claude Code options the fake does not implement (cli-reference).
var knownButUnmodelled = map[string]bool{
	"--max-turns": true, "--append-system-prompt": true, "--system-prompt": true, "--add-dir": true,
	"--input-format": true, "--continue": true, "-c": true, "--dangerously-skip-permissions": true,
	"--session-id": true, "--fallback-model": true, "--include-partial-messages": true, "--max-budget-usd": true,
	"--strict-mcp-config": true, "--tools": true, "--setting-sources": true, "--agents": true, "--json-schema": true,
	"--fork-session": true, "--debug": true, "-d": true, "--bare": true,
}

// parseArgs parses argv the way commander.js does for the options the fake knows.
func parseArgs(args []string) (options, error) {
	o := options{outputFormat: "text"}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, inline, hasInline := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") {
			name, hasInline = a, false
		}
		value := func() (string, error) {
			if hasInline {
				return inline, nil
			}
			if i+1 >= len(args) {
				return "", usageError{fmt.Sprintf("error: option '%s' argument missing", name)}
			}
			i++
			return args[i], nil
		}
		variadic := func() ([]string, error) {
			var vs []string
			if hasInline {
				vs = append(vs, inline)
			}
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vs = append(vs, args[i])
			}
			if len(vs) == 0 {
				return nil, usageError{fmt.Sprintf("error: option '%s' argument missing", name)}
			}
			return vs, nil
		}
		var err error
		switch name {
		case "-v", "--version":
			o.version = true
		case "-p", "--print":
			o.print = true
		case "--verbose":
			o.verbose = true
		case "--output-format":
			o.outputFormat, err = value()
			if err == nil && o.outputFormat != "text" && o.outputFormat != "json" && o.outputFormat != "stream-json" {
				err = usageError{fmt.Sprintf("error: option '--output-format <format>' argument '%s' is invalid. Allowed choices are text, json, stream-json.", o.outputFormat)}
			}
		case "--model":
			o.model, err = value()
		case "-r", "--resume":
			o.resume, err = value()
		case "--settings":
			o.settings, err = value()
		case "--permission-mode":
			o.permissionMode, err = value()
			switch o.permissionMode {
			case "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk":
			default:
				if err == nil {
					err = usageError{fmt.Sprintf("error: option '--permission-mode <mode>' argument '%s' is invalid. Allowed choices are acceptEdits, bypassPermissions, default, dontAsk, plan.", o.permissionMode)}
				}
			}
		case "--permission-prompt-tool":
			o.promptTool, err = value()
		case "--mcp-config":
			var vs []string
			vs, err = variadic()
			o.mcpConfigs = append(o.mcpConfigs, vs...)
		case "--allowedTools", "--allowed-tools":
			var vs []string
			vs, err = variadic()
			o.allowed = append(o.allowed, vs...)
		case "--disallowedTools", "--disallowed-tools":
			var vs []string
			vs, err = variadic()
			o.disallowed = append(o.disallowed, vs...)
		default:
			if knownButUnmodelled[name] {
				return o, unmodelled{"option " + name + " is not modelled"}
			}
			return o, usageError{fmt.Sprintf("error: unknown option '%s'", a)}
		}
		if err != nil {
			return o, err
		}
	}
	if len(positional) > 1 {
		return o, usageError{fmt.Sprintf("error: too many arguments. Expected 1 argument but got %d.", len(positional))}
	}
	if len(positional) == 1 {
		o.prompt, o.hasPrompt = positional[0], true
	}
	return o, nil
}

// splitRules splits --allowedTools values on spaces and commas outside parentheses.
func splitRules(values []string) []string {
	var out []string
	for _, v := range values {
		depth, start := 0, 0
		flush := func(end int) {
			if s := strings.TrimSpace(v[start:end]); s != "" {
				out = append(out, s)
			}
		}
		for i, r := range v {
			switch {
			case r == '(':
				depth++
			case r == ')' && depth > 0:
				depth--
			case (r == ' ' || r == ',') && depth == 0:
				flush(i)
				start = i + 1
			}
		}
		flush(len(v))
	}
	return out
}

// versionAtLeast reports whether dotted version v is at least want.
func versionAtLeast(v, want string) bool {
	a, b := strings.Split(v, "."), strings.Split(want, ".")
	for i := 0; i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		y, _ = strconv.Atoi(b[i])
		if x != y {
			return x > y
		}
	}
	return true
}

// hookCommand is one configured hook command.
type hookCommand struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout"`
}

// hookMatcher is one PreToolUse entry of a settings file's hooks.
type hookMatcher struct {
	Matcher string        `json:"matcher"`
	Hooks   []hookCommand `json:"hooks"`
}

// settingsFile is the part of a Claude Code settings file the fake reads.
type settingsFile struct {
	Permissions struct {
		Allow       []string `json:"allow"`
		Deny        []string `json:"deny"`
		Ask         []string `json:"ask"`
		DefaultMode string   `json:"defaultMode"`
	} `json:"permissions"`
	Hooks map[string][]hookMatcher `json:"hooks"`
}

// settings is the merged configuration of every source.
type settings struct {
	allow, deny, ask []string
	mode             string
	preToolUse       []hookMatcher
}

// configDir is $CLAUDE_CONFIG_DIR or ~/.claude.
func configDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".claude")
}

// jsonOrFile reads value as inline JSON when it looks like JSON, else as a path to a JSON file.
func jsonOrFile(value string, into any) error {
	data := []byte(value)
	if t := strings.TrimSpace(value); !strings.HasPrefix(t, "{") {
		var err error
		if data, err = os.ReadFile(value); err != nil {
			return err
		}
	}
	return json.Unmarshal(data, into)
}

// loadSettings merges user, project, local and --settings sources, lowest precedence first.
func loadSettings(o options, cwd string) (settings, error) {
	var s settings
	type source struct{ name, path, inline string }
	sources := []source{
		{name: "user", path: filepath.Join(configDir(), "settings.json")},
		{name: "project", path: filepath.Join(cwd, ".claude", "settings.json")},
		{name: "local", path: filepath.Join(cwd, ".claude", "settings.local.json")},
	}
	if o.settings != "" {
		sources = append(sources, source{name: "--settings", inline: o.settings})
	}
	for _, src := range sources {
		var f settingsFile
		if src.inline != "" {
			if err := jsonOrFile(src.inline, &f); err != nil {
				return s, usageError{fmt.Sprintf("Error: Invalid settings: %v", err)}
			}
		} else {
			data, err := os.ReadFile(src.path)
			if err != nil {
				continue
			}
			if err := json.Unmarshal(data, &f); err != nil {
				continue // the real CLI skips an invalid settings file with a warning
			}
		}
		s.allow = append(s.allow, f.Permissions.Allow...)
		s.deny = append(s.deny, f.Permissions.Deny...)
		s.ask = append(s.ask, f.Permissions.Ask...)
		if f.Permissions.DefaultMode != "" {
			s.mode = f.Permissions.DefaultMode
		}
		s.preToolUse = append(s.preToolUse, f.Hooks["PreToolUse"]...)
	}
	s.allow = append(s.allow, splitRules(o.allowed)...)
	s.deny = append(s.deny, splitRules(o.disallowed)...)
	if o.permissionMode != "" {
		s.mode = o.permissionMode
	}
	if s.mode == "" {
		s.mode = "default"
	}
	return s, nil
}
