package worker

import (
	"fmt"
	"strings"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/sandbox"
)

// withOutputNote says, in what orch keeps of the agent's answer, how much of its output was never read: the sandbox
// hands the parser lines cut to sandbox.MaxLine, so a result line cut there loses the agent's answer, and the text kept
// of a cut line counts only what the parser dropped of it. Whoever reads the attempt (the brain, a person, the
// failure's error) must know. A middle of stdout the sandbox did not keep is no such loss: every line was read.
func (w *Worker) withOutputNote(runID, taskID string, r agent.Result, res sandbox.Result) agent.Result {
	if res.LinesCut == 0 {
		return r
	}
	w.log.Warn("the agent printed lines longer than orch reads", "run_id", runID, "task_id", taskID,
		"stdout_bytes", res.StdoutBytes, "lines_cut", res.LinesCut, "bytes_not_read", res.LineBytesCut)
	note := outputNote(res)
	if r.Text == "" {
		r.Text = note
	} else {
		r.Text = strings.TrimRight(r.Text, "\n") + "\n\n" + note
	}
	if !r.Success {
		r.Errors = append(r.Errors, note)
	}
	return r
}

// outputNote is the line that says it: "[312 MB of the agent's output not kept: 2 lines longer than 4 MiB were cut]".
func outputNote(res sandbox.Result) string {
	lines := "1 line longer than %d MiB was cut"
	if res.LinesCut > 1 {
		lines = fmt.Sprint(res.LinesCut) + " lines longer than %d MiB were cut"
	}
	return fmt.Sprintf("[%s of the agent's output not kept: "+lines+"]", size(res.LineBytesCut), sandbox.MaxLine>>20)
}

// size says n bytes in the unit a person reads best.
func size(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%d MB", n/1_000_000)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%d kB", n/1000)
	case n == 1:
		return "1 byte"
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
