package agent

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInput means what orch would hand the agent cannot reach its process: a command-line argument or an environment
// variable that holds a NUL byte or is longer than the kernel passes. Retrying cannot help, and nothing is wrong with
// orch's configuration: the message says which input it is and what to do.
var ErrInput = errors.New("the agent's input cannot be passed to its process")

// What reaches an agent's process, and how (what "intact" means for each way in):
//   - The prompt goes on the process's standard input whenever the CLI reads it from there (claude, codex, sim, and
//     a cmd: template without {prompt}): byte for byte, any size, NUL bytes, invalid UTF-8 and control characters
//     included.
//   - An argument or an environment variable (a cmd: template's {prompt}, ids, settings) is a C string: it cannot hold
//     a NUL byte, and Linux refuses one longer than MAX_ARG_STRLEN (32 pages: 131072 bytes with its terminating NUL)
//     with E2BIG, and a whole command line with its environment beyond ARG_MAX. Such a command is refused before
//     anything is started, with ErrInput and a message that says which one; everything else is passed unchanged.
const (
	// MaxArgLen is the longest argument or KEY=VALUE string a process can be given on Linux.
	MaxArgLen = 32*4096 - 1
	// maxCommandLen bounds an agent command's own arguments and environment together. The kernel's bound (ARG_MAX, a
	// quarter of the stack limit: 2 MiB by default) also counts the environment the sandbox adds and a pointer per
	// string; half of it leaves room for those.
	maxCommandLen = 1 << 20
)

// promptArgLimit is the longest prompt an adapter that can take its prompt either way passes as an argument: well
// under MaxArgLen, so the rest of the command line and the environment fit beside it.
const promptArgLimit = 64 << 10

// promptFitsArgument reports whether a prompt goes as a command-line argument for an adapter that takes it either way:
// short enough, and without a NUL byte, which no argument can carry. Anything else goes on standard input.
func promptFitsArgument(prompt string) bool {
	return len(prompt) <= promptArgLimit && !strings.ContainsRune(prompt, 0)
}

// checkCommand refuses a command that could not be started because of what it carries. prompt is the prompt when it
// is in the arguments ("" when it goes on stdin): it is named apart, being what a person can do something about; other
// strings are named by their position.
func checkCommand(c Command, prompt string) error {
	total := 0
	for i, a := range c.Args {
		if err := checkString(a, prompt, fmt.Sprintf("argument %d", i)); err != nil {
			return err
		}
		total += len(a) + 1
	}
	for _, kv := range c.Env {
		k, _, _ := strings.Cut(kv, "=")
		if err := checkString(kv, "", "environment variable "+bounded(k, 64)); err != nil {
			return err
		}
		total += len(kv) + 1
	}
	if total > maxCommandLen {
		return fmt.Errorf("%w: the command line and environment are %d bytes, more than orch passes to a process (%d); "+
			"give the prompt on standard input instead", ErrInput, total, maxCommandLen)
	}
	return nil
}

func checkString(s, prompt, what string) error {
	inPrompt := prompt != "" && strings.Contains(s, prompt)
	if i := strings.IndexByte(s, 0); i >= 0 {
		if inPrompt && strings.IndexByte(prompt, 0) >= 0 {
			return fmt.Errorf("%w: the prompt holds a NUL byte (at byte %d), which no command-line argument can carry; "+
				"use an agent that reads its prompt from standard input (for cmd:, leave {prompt} out of the template)",
				ErrInput, strings.IndexByte(prompt, 0))
		}
		return fmt.Errorf("%w: %s holds a NUL byte (at byte %d), which a process cannot be given", ErrInput, what, i)
	}
	if len(s) > MaxArgLen {
		if inPrompt {
			return fmt.Errorf("%w: the prompt is %d bytes, and one command-line argument holds at most %d; use an agent "+
				"that reads its prompt from standard input (for cmd:, leave {prompt} out of the template)",
				ErrInput, len(prompt), MaxArgLen)
		}
		return fmt.Errorf("%w: %s is %d bytes, and a process can be given at most %d in one", ErrInput, what, len(s), MaxArgLen)
	}
	return nil
}

// bounded cuts s for an error message.
func bounded(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…", s[:n])
}
