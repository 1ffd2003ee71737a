package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// toolResult is a tool's answer: the tool_result content, and the tool_use_result the stream carries.
type toolResult struct {
	content string
	isError bool
	meta    any
}

// toolError is a tool's refusal in the real <tool_use_error> wrapping.
func toolError(msg string) toolResult {
	return toolResult{content: "<tool_use_error>" + msg + "</tool_use_error>", isError: true, meta: "Error: " + msg}
}

// runTool runs one approved call.
func (c *claude) runTool(call toolCall) (toolResult, error) {
	var in map[string]any
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return toolResult{}, fmt.Errorf("the input of %s is not a JSON object: %w", call.Name, err)
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch call.Name {
	case "Bash":
		return c.bash(str("command"), in["timeout"]), nil
	case "Read":
		return c.read(c.absPath(str("file_path")), in["offset"], in["limit"]), nil
	case "Write":
		return c.write(c.absPath(str("file_path")), str("content")), nil
	case "Edit":
		all, _ := in["replace_all"].(bool)
		return c.edit(c.absPath(str("file_path")), str("old_string"), str("new_string"), all), nil
	case "Glob":
		return c.glob(str("pattern"), c.absPath(str("path"))), nil
	case "Grep":
		return c.grep(str("pattern"), c.absPath(str("path"))), nil
	case "AskUserQuestion":
		return askAnswer(in), nil
	}
	return toolResult{}, unmodelled{"running the tool " + call.Name}
}

// bash runs a command with sh -c in the working directory (default timeout 2 minutes, input timeout in ms).
func (c *claude) bash(command string, timeout any) toolResult {
	d := 2 * time.Minute
	if ms, ok := timeout.(float64); ok && ms > 0 {
		d = time.Duration(ms) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = c.cwd
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimRight(stdout.String(), "\n")
	errText := strings.TrimRight(stderr.String(), "\n")
	meta := map[string]any{"stdout": out, "stderr": errText, "interrupted": false, "isImage": false}
	combined := out
	if errText != "" {
		if combined != "" {
			combined += "\n"
		}
		combined += errText
	}
	if err != nil {
		code := -1
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		}
		msg := fmt.Sprintf("Exit code %d\n%s", code, combined)
		return toolResult{content: msg, isError: true, meta: "Error: " + msg}
	}
	return toolResult{content: combined, meta: meta}
}

// markRead remembers that the model read path in this session.
func (c *claude) markRead(path string) {
	if !slices.Contains(c.state.ReadFiles, path) {
		c.state.ReadFiles = append(c.state.ReadFiles, path)
	}
}

// read returns a file as cat -n numbered lines.
func (c *claude) read(path string, offset, limit any) toolResult {
	data, err := os.ReadFile(path)
	if err != nil {
		return toolError("File does not exist.")
	}
	c.markRead(path)
	text := string(data)
	if text == "" {
		return toolResult{content: "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
			meta: map[string]any{"type": "text", "file": map[string]any{"filePath": path, "content": "", "numLines": 0, "startLine": 1, "totalLines": 0}}}
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	start := 1
	if f, ok := offset.(float64); ok && f >= 1 {
		start = int(f)
	}
	end := len(lines)
	if f, ok := limit.(float64); ok && f > 0 && start-1+int(f) < end {
		end = start - 1 + int(f)
	}
	var b strings.Builder
	var raw []string
	for i := start; i <= end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
		raw = append(raw, lines[i-1])
	}
	return toolResult{content: b.String(), meta: map[string]any{"type": "text", "file": map[string]any{"filePath": path,
		"content": strings.Join(raw, "\n"), "numLines": len(raw), "startLine": start, "totalLines": len(lines)}}}
}

// mustHaveRead refuses a change to an existing file the model has not read.
func (c *claude) mustHaveRead(path string) (toolResult, bool) {
	if _, err := os.Stat(path); err == nil && !slices.Contains(c.state.ReadFiles, path) {
		return toolError("File has not been read yet. Read it first before writing to it."), false
	}
	return toolResult{}, true
}

// write creates or replaces a file, creating its directories.
func (c *claude) write(path, content string) toolResult {
	if res, ok := c.mustHaveRead(path); !ok {
		return res
	}
	old, err := os.ReadFile(path)
	existed := err == nil
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return toolError(err.Error())
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return toolError(err.Error())
	}
	c.markRead(path)
	meta := map[string]any{"type": "create", "filePath": path, "content": content, "structuredPatch": []any{}, "originalFile": nil}
	if !existed {
		return toolResult{content: "File created successfully at: " + path, meta: meta}
	}
	meta["type"], meta["originalFile"] = "update", string(old)
	var b strings.Builder
	fmt.Fprintf(&b, "The file %s has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n", path)
	for i, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, l)
	}
	return toolResult{content: b.String(), meta: meta}
}

// edit replaces old with new in a file the model has read.
func (c *claude) edit(path, old, new string, all bool) toolResult {
	data, err := os.ReadFile(path)
	if err != nil {
		return toolError("File does not exist.")
	}
	if res, ok := c.mustHaveRead(path); !ok {
		return res
	}
	text := string(data)
	n := strings.Count(text, old)
	switch {
	case old == new:
		return toolError("No changes to make: old_string and new_string are exactly the same.")
	case old == "" || n == 0:
		return toolError("String to replace not found in file.\nString: " + old)
	case n > 1 && !all:
		return toolError(fmt.Sprintf("Found %d matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: %s", n, old))
	}
	updated := strings.Replace(text, old, new, map[bool]int{true: -1, false: 1}[all])
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		return toolError(err.Error())
	}
	meta := map[string]any{"filePath": path, "oldString": old, "newString": new, "originalFile": text,
		"structuredPatch": []any{}, "userModified": false, "replaceAll": all}
	if all {
		return toolResult{content: fmt.Sprintf("The file %s has been updated. All occurrences of '%s' were successfully replaced with '%s'.", path, old, new), meta: meta}
	}
	return toolResult{content: "The file " + path + " has been updated successfully.", meta: meta}
}

// glob lists the files under dir whose path relative to dir matches pattern.
func (c *claude) glob(pattern, dir string) toolResult {
	start := time.Now()
	re := globRegexp(pattern)
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if rel, _ := filepath.Rel(dir, p); re.MatchString(rel) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	meta := map[string]any{"filenames": files, "durationMs": time.Since(start).Milliseconds(), "numFiles": len(files), "truncated": false}
	if len(files) == 0 {
		return toolResult{content: "No files found", meta: meta}
	}
	return toolResult{content: strings.Join(files, "\n"), meta: meta}
}

// grep lists the files under dir with a line matching the regular expression (output_mode files_with_matches).
func (c *claude) grep(pattern, dir string) toolResult {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return toolError("Invalid regex: " + err.Error())
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && re.Match(data) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	meta := map[string]any{"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}
	if len(files) == 0 {
		return toolResult{content: "No files found", meta: meta}
	}
	return toolResult{content: fmt.Sprintf("Found %d file%s\n%s", len(files), map[bool]string{true: "", false: "s"}[len(files) == 1], strings.Join(files, "\n")), meta: meta}
}

// askAnswer is AskUserQuestion's result for the answers in its input (reference 08 block C).
func askAnswer(in map[string]any) toolResult {
	answers, _ := in["answers"].(map[string]any)
	var parts []string
	questions, _ := in["questions"].([]any)
	seen := map[string]bool{}
	add := func(q string) {
		a, ok := answers[q]
		if !ok || seen[q] {
			return
		}
		seen[q] = true
		var text string
		switch v := a.(type) {
		case string:
			text = v
		case []any:
			var labels []string
			for _, l := range v {
				labels = append(labels, fmt.Sprint(l))
			}
			text = strings.Join(labels, ", ")
		default:
			text = fmt.Sprint(v)
		}
		parts = append(parts, fmt.Sprintf("%q=%q", q, text))
	}
	for _, q := range questions {
		if m, ok := q.(map[string]any); ok {
			add(fmt.Sprint(m["question"]))
		}
	}
	var rest []string
	for q := range answers {
		rest = append(rest, q)
	}
	sort.Strings(rest)
	for _, q := range rest {
		add(q)
	}
	text := "User has answered your questions: " + strings.Join(parts, ", ") + ". You can now continue with the user's answers in mind."
	return toolResult{content: text, meta: map[string]any{"questions": in["questions"], "answers": answers}}
}
