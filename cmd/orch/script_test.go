package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The CLI as its users see it: each script in testdata/script is a journey through the orch these tests built, and
// compares what orch prints, whole, with the golden files the script holds. What varies from one run to the next is
// normalized first (see normalize). After a deliberate change of the output,
//
//	go test ./cmd/orch -run TestScripts -update
//
// rewrites the golden files from what orch prints now; read the diff before committing it.
var update = flag.Bool("update", false, "rewrite the golden files of testdata/script with what orch prints now")

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		// Under the test's own temporary directory, which goes when the test ends: testscript removes its own only
		// when every script ran, not under -run.
		WorkdirRoot:        t.TempDir(),
		Setup:              setupScript,
		UpdateScripts:      *update,
		RequireUniqueNames: true,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"orch":      cmdOrch,
			"exits":     cmdExits,
			"normalize": cmdNormalize,
		},
	})
}

// scriptState is what a script's commands remember between lines.
type scriptState struct {
	code      int  // the exit code of the last orch
	unchecked bool // the last orch failed, as the script expected, and no exits line said how yet
	runs      map[string]string
	user      string
}

type scriptStateKey struct{}

func stateOf(ts *testscript.TestScript) *scriptState {
	return ts.Value(scriptStateKey{}).(*scriptState)
}

// setupScript gives a script the examples in its work directory, and an environment where orch is the one these
// tests built, its coverage counters go with the others', and nothing of the machine's orch settings leaks in (the
// environment of a script starts empty). The brain is the heuristic, whatever LLM CLI the machine has.
func setupScript(env *testscript.Env) error {
	if err := os.CopyFS(filepath.Join(env.WorkDir, "examples"), os.DirFS(filepath.Join("..", "..", "examples"))); err != nil {
		return err
	}
	env.Setenv("PATH", filepath.Dir(orchBin)+string(os.PathListSeparator)+env.Getenv("PATH"))
	env.Setenv("GOCOVERDIR", os.Getenv("GOCOVERDIR"))
	env.Setenv("ORCH_BRAIN", "heuristic")
	env.Values[scriptStateKey{}] = &scriptState{runs: map[string]string{}, user: whoami()}
	return nil
}

// cmdOrch runs orch with the script's stdin, environment and directory: `orch ARGS` must exit 0, `! orch ARGS` must
// not, and its exit code is then checked by the next line, `exits N`.
func cmdOrch(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if st.unchecked {
		ts.Fatalf("the exit code of the orch before is not checked: follow `! orch …` with `exits N`")
	}
	err := ts.Exec("orch", args...)
	st.code = 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("orch: %v", err)
		}
		st.code = ee.ExitCode()
	}
	switch {
	case neg && st.code == 0:
		ts.Fatalf("orch exited 0, want a failure")
	case !neg && st.code != 0:
		ts.Fatalf("orch exited %d", st.code)
	}
	st.unchecked = neg
}

// cmdExits checks the exit code of the last orch: `exits 3`.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: exits CODE")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("usage: exits CODE")
	}
	st := stateOf(ts)
	if st.code != want {
		ts.Fatalf("orch exited %d, want %d", st.code, want)
	}
	st.unchecked = false
}

// cmdNormalize rewrites the stdout and stderr of the last command so that a golden file can hold them: run ids
// become $RUN, $RUN2, … in the order they first appear, and those variables are set to the real ids for the lines
// that follow; the work directory becomes $WORK, the user's name $USER (where orch names who answered), clock times
// hh:mm:ss, dates YYYY-MM-DD, durations <duration>, and the timings of --json events <n>.
func cmdNormalize(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: normalize")
	}
	st := stateOf(ts)
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	fmt.Fprint(ts.Stdout(), st.normalize(ts, stdout))
	fmt.Fprint(ts.Stderr(), st.normalize(ts, stderr))
}

var (
	runIDRE    = regexp.MustCompile(`\br-[a-z2-7]{10}\b`)
	rfc3339RE  = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	dateTimeRE = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b`)
	stampRE    = regexp.MustCompile(`\[\d{2}:\d{2}:\d{2}\]`)
	// A duration as Go prints it, with the spaces after it: a table pads its cells, and the padding follows the
	// duration's length.
	durationRE = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|us|ms|s)\b( *)`)
	// Durations and instants in --json events.
	jsonTimingRE = regexp.MustCompile(`"(duration_ms|wait_seconds|waited_seconds|entered_ms)":[-+0-9.e]+`)
)

const durationMark = "<duration>"

func (st *scriptState) normalize(ts *testscript.TestScript, s string) string {
	if work := ts.Getenv("WORK"); work != "" {
		s = strings.ReplaceAll(s, work, "$WORK")
	}
	s = runIDRE.ReplaceAllStringFunc(s, func(id string) string {
		if name, ok := st.runs[id]; ok {
			return "$" + name
		}
		name := "RUN"
		if n := len(st.runs); n > 0 {
			name = fmt.Sprintf("RUN%d", n+1)
		}
		st.runs[id] = name
		ts.Setenv(name, id)
		return "$" + name
	})
	s = rfc3339RE.ReplaceAllString(s, "YYYY-MM-DDThh:mm:ssZ")
	s = dateTimeRE.ReplaceAllString(s, "YYYY-MM-DD hh:mm:ss")
	s = stampRE.ReplaceAllString(s, "[hh:mm:ss]")
	s = jsonTimingRE.ReplaceAllString(s, `"$1":<n>`)
	s = durationRE.ReplaceAllStringFunc(s, func(d string) string {
		spaces := len(d) - len(strings.TrimRight(d, " "))
		if spaces == 0 {
			return durationMark
		}
		// Keep the width of a table's cell, and at least one space.
		return durationMark + strings.Repeat(" ", max(1, len(d)-len(durationMark)))
	})
	if st.user != "" {
		name := regexp.QuoteMeta(st.user)
		s = regexp.MustCompile(`\bby `+name+`\b`).ReplaceAllString(s, "by $$USER")
		s = strings.ReplaceAll(s, `"by":"`+st.user+`"`, `"by":"$USER"`)
	}
	return s
}
