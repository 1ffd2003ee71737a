// Command fakeclaude stands in for the Claude Code CLI in brain's tests. It records each invocation and
// replies from fixture files, all steered by environment variables:
//
//	FAKECLAUDE_DIR         where invocation n writes argv-n.json and stdin-n.txt (n counts from 1, kept in
//	                       the file "count")
//	FAKECLAUDE_FAIL        how many invocations fail before any succeeds (default 0)
//	FAKECLAUDE_FAIL_REPLY  a file printed to stdout by a failing invocation (default: "boom" on stderr)
//	FAKECLAUDE_FAIL_EXIT   the exit code of a failing invocation (default 1)
//	FAKECLAUDE_HANG        when set, a failing invocation sleeps a minute instead
//	FAKECLAUDE_REPLIES     comma-separated files; the k-th succeeding invocation prints the k-th, the last
//	                       one repeating, and exits 0
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude:", err)
		os.Exit(99)
	}
}

func run() error {
	dir := os.Getenv("FAKECLAUDE_DIR")
	if dir == "" {
		return fmt.Errorf("FAKECLAUDE_DIR is not set")
	}
	n := 1
	if b, err := os.ReadFile(filepath.Join(dir, "count")); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		n++
	}
	if err := os.WriteFile(filepath.Join(dir, "count"), []byte(strconv.Itoa(n)), 0o644); err != nil {
		return err
	}
	argv, _ := json.Marshal(os.Args[1:])
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("argv-%d.json", n)), argv, 0o644); err != nil {
		return err
	}
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("stdin-%d.txt", n)), stdin, 0o644); err != nil {
		return err
	}

	fails, _ := strconv.Atoi(os.Getenv("FAKECLAUDE_FAIL"))
	if n <= fails {
		if os.Getenv("FAKECLAUDE_HANG") != "" {
			time.Sleep(time.Minute)
		}
		code := 1
		if c, err := strconv.Atoi(os.Getenv("FAKECLAUDE_FAIL_EXIT")); err == nil {
			code = c
		}
		if f := os.Getenv("FAKECLAUDE_FAIL_REPLY"); f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			os.Stdout.Write(b)
		} else {
			fmt.Fprintln(os.Stderr, "boom")
		}
		os.Exit(code)
	}
	replies := strings.Split(os.Getenv("FAKECLAUDE_REPLIES"), ",")
	k := min(n-fails, len(replies)) - 1
	b, err := os.ReadFile(replies[k])
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}
