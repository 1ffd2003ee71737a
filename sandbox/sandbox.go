// Package sandbox runs agent processes where they can do no harm: a Docker container, or a local child process for
// development.
package sandbox

import (
	"bytes"
	"errors"
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
	// Dir is the workspace the process works in.
	Dir string
	// Timeout bounds the process's wall-clock time; zero means no bound other than the context.
	Timeout time.Duration
	// Recovered says the run's previous attempt ended with its worker (a crash): whatever that attempt left running
	// (its processes, its container) is killed first, so that two agents never work in one workspace.
	Recovered bool
}

// Result is how the process ended.
type Result struct {
	ExitCode int
	// Stdout is everything the process printed, in full: agents print lines of megabytes and the brain reads them all.
	Stdout []byte
	// Stderr is the tail of what the process printed on stderr (bounded).
	Stderr    []byte
	Duration  time.Duration
	TimedOut  bool
	OOMKilled bool
	// Signal names the signal that killed the process, if one did.
	Signal string
}

// ErrNoCommand is returned for a Spec without a program.
var ErrNoCommand = errors.New("sandbox: no command to run")

// stderrTail bounds how much stderr is kept: enough to explain a failure, not enough to exhaust memory.
const stderrTail = 64 << 10

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lineWriter hands every complete line (without its newline) to fn and keeps everything written.
type lineWriter struct {
	all     []byte
	pending int // start of the unfinished line in all
	fn      func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.all = append(w.all, p...)
	for {
		i := bytes.IndexByte(w.all[w.pending:], '\n')
		if i < 0 {
			return len(p), nil
		}
		if w.fn != nil {
			w.fn(w.all[w.pending : w.pending+i])
		}
		w.pending += i + 1
	}
}

// flush hands over a last line that had no newline.
func (w *lineWriter) flush() {
	if w.pending < len(w.all) && w.fn != nil {
		w.fn(w.all[w.pending:])
	}
	w.pending = len(w.all)
}
