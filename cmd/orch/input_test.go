package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchrun/orch/agent"
)

// stdinAgent is a cmd: agent that keeps the prompt it read on stdin in prompt-<attempt>, asks a question on its first
// attempt and is done on the next.
const stdinAgent = `cat > "prompt-$ORCH_ATTEMPT"
if [ "$ORCH_ATTEMPT" = 1 ]; then
  printf 'QUESTION: Which cache should I use?\nOPTIONS:\nA) Redis  B) In-memory\nRECOMMENDATION: B\n'
else
  echo 'Done. All tests pass.'
fi
`

// bigTaskPlan writes a plan of one task whose body is a mebibyte, control characters included, and returns the body.
// Not a carriage return: in a plan it ends a line, as in any text file.
func bigTaskPlan(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("Start of the body: \x1b[1mbold\x1b[0m, a bell \a, a tab \t, a DEL \x7f.\n")
	for b.Len() < 1<<20 {
		b.WriteString("Implement the cache exactly as this long specification says, line after line.\n")
	}
	b.WriteString("End of the body.")
	body := b.String()
	writeFile(t, dir, "big.md", "# Big\n\n## Task 1.1: Build the cache\n\n"+body+"\n")
	return body
}

// A mebibyte task reaches a cmd: agent on its stdin; a 300 KiB answer becomes guidance that reaches the next attempt
// byte for byte; an answer with a NUL byte is refused with a clear message and the question asked again.
func TestHugeTaskAndAnswerReachTheAgent(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	body := bigTaskPlan(t, dir)
	writeFile(t, dir, "agent.sh", stdinAgent)
	// An answers file holds one answer per line, trimmed: this one has no line break nor space at its ends.
	answer := "Use an in-memory LRU.\x1b[0m\a\x7f" + strings.Repeat(" Keep at most 500 entries and evict the oldest first.", 300<<10/53)
	writeFile(t, dir, "answers.txt", "use\x00redis\n"+answer+"\n")

	r := orch(t, dir, "", "run", "--agent", "cmd:sh "+filepath.Join(dir, "agent.sh"), "--brain", "heuristic",
		"--answers", "answers.txt", "big.md")
	must(t, r, 0, "NEEDS HUMAN INPUT", "the answer holds a NUL byte (at byte 3), which cannot be passed to an agent",
		"Task 1.1: COMPLETED")
	if strings.Contains(r.stdout+r.stderr, "configuration") {
		t.Errorf("an input problem was reported as a configuration one:\n%s", r)
	}

	first := readFile(t, filepath.Join(dir, "prompt-1"))
	if !strings.Contains(first, body) {
		t.Fatalf("the first prompt (%d bytes) does not hold the %d-byte task body as written", len(first), len(body))
	}
	second := readFile(t, filepath.Join(dir, "prompt-2"))
	if g := agent.GuidanceFromPrompt(second); len(g) != 1 || g[0] != answer {
		t.Fatalf("the second prompt's guidance is %d items, not the %d-byte answer as written", len(g), len(answer))
	}
	if !strings.Contains(second, body) {
		t.Fatal("the second prompt lost the task body")
	}
}

// An answer with a NUL byte leaves the question open: the run parks, and a person answers it later.
func TestNULAnswerLeavesTheRunAnswerable(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	writeFile(t, dir, "agent.sh", stdinAgent)
	writeFile(t, dir, "small.md", "# Small\n\n## Task 1.1: Build the cache\n\nBuild it.\n")
	writeFile(t, dir, "answers.txt", "\x00\n")
	agentFlag := "cmd:sh " + filepath.Join(dir, "agent.sh")

	r := orch(t, dir, "", "run", "--agent", agentFlag, "--brain", "heuristic", "--answers", "answers.txt", "small.md")
	must(t, r, 3, "NUL byte", "cannot be passed to an agent")
	id := runID(t, r)
	must(t, orch(t, dir, "", "escalation", "resolve", id, "--answer", "in memory, 500 entries"), 0)
	must(t, orch(t, dir, "", "resume", id), 0, "Task 1.1: COMPLETED")
	if g := agent.GuidanceFromPrompt(readFile(t, filepath.Join(dir, "prompt-2"))); len(g) != 1 || g[0] != "in memory, 500 entries" {
		t.Fatalf("guidance %q", g)
	}
}

// A template that puts the prompt in an argument cannot pass a mebibyte: orch says so, as a permanent failure with
// what to do, and never as a configuration error nor a fork/exec failure.
func TestPromptTooBigForAnArgumentIsSaid(t *testing.T) {
	t.Parallel()
	dir := workdir(t)
	bigTaskPlan(t, dir)
	r := orch(t, dir, "", "run", "--agent", "cmd:true {prompt}", "--brain", "heuristic", "big.md")
	must(t, r, 3, "cannot be given to the agent", "one command-line argument holds at most 131071",
		"leave {prompt} out of the template")
	for _, bad := range []string{"Fix the configuration", "fork/exec", "argument list too long"} {
		if strings.Contains(r.stdout+r.stderr, bad) {
			t.Errorf("the output says %q:\n%s", bad, r)
		}
	}
	show := orch(t, dir, "", "escalation", "show", runID(t, r), "--json")
	must(t, show, 0, `"trigger": "permanent"`)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
