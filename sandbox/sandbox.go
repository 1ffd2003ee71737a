// Package sandbox runs agent processes where they can do no harm: a Docker container, or a local child process for
// development.
package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Spec is one agent process to run.
type Spec struct {
	RunID  string
	TaskID string
	// Args is the command line; Args[0] is the program.
	Args []string
	// Env holds KEY=VALUE pairs added to the sandbox's base environment.
	Env []string
	// Stdin is what the process reads on its standard input, byte for byte and of any size; nil gives it none (EOF at
	// once). It is how an agent gets a prompt an argument could not hold.
	Stdin []byte
	// Dir is the workspace the process works in.
	Dir string
	// ReadOnly are directories outside the workspace the process needs to read (the repository's objects, which the
	// agent's own git borrows). Docker mounts them read-only at the same paths when it makes the run's container; the
	// local sandbox has nothing to do for them.
	ReadOnly []string
	// Timeout bounds the process's wall-clock time; zero means no bound other than the context.
	Timeout time.Duration
	// Recovered says the run's previous attempt ended with its worker (a crash): whatever that attempt left running
	// (its processes, its container) is killed first, so that two agents never work in one workspace.
	Recovered bool
}

// Result is how the process ended.
type Result struct {
	ExitCode int
	// Stdout is what is kept of what the process printed: all of it up to 4 MiB, else its first and its last 2 MiB
	// with a line between them saying how many bytes were left out ("[… N bytes of output not kept …]").
	Stdout []byte
	// StdoutBytes is how many bytes the process printed on stdout; StdoutNotKept how many of them Stdout leaves out.
	StdoutBytes, StdoutNotKept int64
	// LinesCut counts the stdout lines longer than MaxLine: each was handed to onLine cut to its first MaxLine bytes.
	// LineBytesCut is what they had beyond that: printed, counted, never handed over.
	LinesCut     int
	LineBytesCut int64
	// Stderr is the last 64 KiB of what the process printed on stderr; StderrBytes counts all of it.
	Stderr      []byte
	StderrBytes int64
	Duration    time.Duration
	TimedOut    bool
	OOMKilled   bool
	// Signal names the signal that killed the process, if one did.
	Signal string
}

// ErrNoCommand is returned for a Spec without a program.
var ErrNoCommand = errors.New("sandbox: no command to run")

// ErrInput is returned for a Spec whose arguments or environment no process can be given (a NUL byte, a string
// longer than the kernel passes): nothing was started, and starting it again would fail the same way.
var ErrInput = errors.New("sandbox: the command cannot be given to a process")

// maxArgLen is Linux's MAX_ARG_STRLEN less the terminating NUL: a longer argument or environment string fails exec
// with E2BIG.
const maxArgLen = 32*4096 - 1

// checkSpec refuses what exec would refuse with EINVAL or E2BIG (the engine's runtime too, for Docker), so that it is
// told apart from a program that is missing or broken. Strings are named by position, never echoed: they may be a
// prompt of megabytes.
func checkSpec(spec Spec) error {
	if len(spec.Args) == 0 || spec.Args[0] == "" {
		return ErrNoCommand
	}
	for i, a := range spec.Args {
		if err := checkExecString(a, fmt.Sprintf("argument %d", i)); err != nil {
			return err
		}
	}
	for i, kv := range spec.Env {
		if err := checkExecString(kv, fmt.Sprintf("environment entry %d", i)); err != nil {
			return err
		}
	}
	return nil
}

func checkExecString(s, what string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("%w: %s holds a NUL byte (at byte %d)", ErrInput, what, i)
	}
	if len(s) > maxArgLen {
		return fmt.Errorf("%w: %s is %d bytes, more than the %d one can hold", ErrInput, what, len(s), maxArgLen)
	}
	return nil
}

// stderrTail bounds how much stderr is kept: enough to explain a failure, not enough to exhaust memory.
const stderrTail = 64 << 10

// tailBuffer keeps the last max bytes written to it, and counts them all.
type tailBuffer struct {
	buf   []byte
	max   int
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return n, nil
}
