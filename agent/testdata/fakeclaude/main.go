// Command fakeclaude stands in for the claude CLI in tests: it records how it was called and replays a
// transcript.
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
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude:", err)
		os.Exit(99)
	}
}

func run() error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	inv := Invocation{Args: os.Args[1:], Dir: dir, Env: map[string]string{}}
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
