package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// outputShape is one way an agent prints its megabytes.
type outputShape struct {
	name  string
	agent string
	env   []string
}

type outputResult struct {
	peakMB *float64 // the largest of the shapes' peaks; nil where the OS does not report it
	note   string
}

// measureOutputRSS runs `orch run` (the binary, its embedded store, the local sandbox, the heuristic brain) on a
// one-task plan whose agent prints mb megabytes, in three shapes: lines of 100 bytes; one line that never ends; and
// Claude Code's stream-json in lines just under the sandbox's 4 MiB line bound, the costliest to parse, replayed by
// the fake claude of agent/testdata/fakeclaude. It returns the largest peak resident set size of orch run, as the
// kernel reports it for the process (ru_maxrss: orch's own, or that of a process it waited for, if larger).
func measureOutputRSS(ctx context.Context, r *rig, mb int) (outputResult, error) {
	ws, err := r.workspace("output", map[string]string{"big.md": "# Big\n\n## Task 1: Print a lot\n\nPrint it.\n"})
	if err != nil {
		return outputResult{}, err
	}
	fake, err := buildFakeClaude(ctx, r.tmp)
	if err != nil {
		return outputResult{}, err
	}
	transcript := filepath.Join(r.tmp, "output-transcript.jsonl")
	if err := writeBigTranscript(transcript, mb); err != nil {
		return outputResult{}, err
	}
	defer os.Remove(transcript)
	bytes := mb * 1_000_000
	shapes := []outputShape{
		{name: "lines", agent: fmt.Sprintf(`cmd:sh -c "yes %s | head -c %d; echo Done."`, strings.Repeat("0123456789", 10)[:99], bytes)},
		{name: "one endless line", agent: fmt.Sprintf(`cmd:sh -c "head -c %d /dev/zero | tr '\0' a; echo; echo Done."`, bytes)},
		{name: "stream-json", agent: "claude", env: []string{
			"PATH=" + filepath.Dir(fake) + string(os.PathListSeparator) + os.Getenv("PATH"), "FAKE_CLAUDE_TRANSCRIPT=" + transcript,
			"ORCH_AGENT_ENV=FAKE_CLAUDE_TRANSCRIPT"}}, // agents get orch's environment only by name
	}
	var res outputResult
	var parts []string
	for _, s := range shapes {
		rss, measured, err := runRSS(ctx, r.orchBin, ws, s)
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.name, err)
		}
		if !measured {
			res.note = "not measured: this OS does not report a process's peak resident set size to the bench"
			return res, nil
		}
		mib := float64(rss) / (1 << 20)
		if res.peakMB == nil || mib > *res.peakMB {
			res.peakMB = &mib
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", s.name, mib))
	}
	res.note = fmt.Sprintf("Peak resident set size of `orch run` (MiB, the kernel's ru_maxrss) on a one-task plan whose "+
		"agent prints %d MB to stdout, local sandbox, embedded store, heuristic brain; the largest of three shapes: "+
		"%s. Lines of 100 bytes (`yes | head`, the command template), one line of %d MB (cut at the sandbox's "+
		"4 MiB line bound, the rest counted), and Claude Code stream-json in 4,000,000-byte assistant lines with a "+
		"3 MB result (the fake claude replaying a transcript; the claude parser decodes each line). What orch keeps: "+
		"the first and last 2 MiB of stdout, lines of at most 4 MiB, 1 MiB of the agent's text.",
		mb, strings.Join(parts, ", "), mb)
	return res, nil
}

// runRSS runs orch run with one shape's agent and returns its peak RSS in bytes; measured is false where the OS
// does not say.
func runRSS(ctx context.Context, orchBin, ws string, s outputShape) (rss int64, measured bool, err error) {
	cmd := exec.CommandContext(ctx, orchBin, "run", "big.md", "--agent", s.agent, "--brain", "heuristic")
	cmd.Dir = ws
	// orch run as a person runs it in a directory: its embedded store, the local sandbox.
	cmd.Env = append(append(os.Environ(), "ORCH_REDIS_URL=", "ORCH_AGENT=", "ORCH_BRAIN=", "ORCH_SANDBOX="), s.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, false, fmt.Errorf("%v\n%s", err, tail(out.String()))
	}
	if !strings.Contains(out.String(), "Task 1: COMPLETED") {
		return 0, false, fmt.Errorf("the task did not complete:\n%s", tail(out.String()))
	}
	rss, measured = peakRSS(cmd.ProcessState)
	return rss, measured, nil
}

// writeBigTranscript writes Claude Code stream-json of about mb megabytes, shaped like the CLI's (2.1.63, as
// recorded in agent/testdata/claude/02_stream_claude-2.1.63.jsonl): an init line, assistant messages of 4,000,000
// bytes of text each, and a result of 3 MB ending in a completion the heuristic brain reads.
func writeBigTranscript(path string, mb int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := strings.Repeat("a", 4_000_000)
	fmt.Fprintln(w, `{"type":"system","subtype":"init","session_id":"s-big","model":"claude-sonnet-4-6","claude_code_version":"2.1.63"}`)
	for i := range max(1, (mb-3)/4) {
		fmt.Fprintf(w, `{"type":"assistant","message":{"model":"claude-sonnet-4-6","id":"msg_%d","type":"message","role":"assistant","content":[{"type":"text","text":"%s"}],"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s-big"}`+"\n", i, text)
	}
	fmt.Fprintf(w, `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"%s Done. All tests pass.","session_id":"s-big","total_cost_usd":0.5}`+"\n", strings.Repeat("b", 3_000_000))
	return errors.Join(w.Flush(), f.Close())
}

// tail is the end of a command's output, for an error.
func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
