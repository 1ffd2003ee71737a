package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostileInput is what an agent must receive byte for byte on stdin: NUL bytes, invalid UTF-8, control characters,
// and more than any pipe buffer or argument holds.
func hostileInput() []byte {
	var b bytes.Buffer
	b.WriteString("nul\x00nul\x00 bad utf-8 \xff\xfe\xc3 controls \x1b[31m\r\b\x7f\x01 end of head\n")
	for b.Len() < 1<<20 {
		b.WriteString("the same line again, a mebibyte of it\n")
	}
	b.WriteString("no newline at the end\x00")
	return b.Bytes()
}

func TestLocalStdin(t *testing.T) {
	for name, shim := range map[string][]string{"direct": nil, "shim": testShim()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testStdin(t, NewLocal(LocalConfig{KillGrace: 200 * time.Millisecond, Shim: shim}), "")
		})
	}
}

func TestDockerStdin(t *testing.T) {
	d := newTestDocker(t, DockerConfig{})
	testStdin(t, d, newRunID(t, d))
}

// execer is what the stdin tests need of a sandbox.
type execer interface {
	Exec(ctx context.Context, spec Spec, onLine func([]byte)) (Result, error)
}

func testStdin(t *testing.T, sb execer, runID string) {
	ctx := context.Background()
	in := hostileInput()
	ws := workspace(t, "") // the run's workspace (a Docker run's container mounts the first it is given)
	t.Run("reaches the process byte for byte", func(t *testing.T) {
		res, err := sb.Exec(ctx, Spec{RunID: runID, TaskID: "1", Dir: ws, Stdin: in,
			Args: []string{"/bin/sh", "-c", "cat > got; echo read"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || string(res.Stdout) != "read\n" {
			t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		got, err := os.ReadFile(filepath.Join(ws, "got"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("the process read %d bytes, not the %d given (first difference at %d)", len(got), len(in), firstDiff(got, in))
		}
	})
	t.Run("a process that does not read it ends as it would", func(t *testing.T) {
		res, err := sb.Exec(ctx, Spec{RunID: runID, TaskID: "1", Dir: ws, Stdin: in,
			Args: []string{"/bin/sh", "-c", "echo ignored; exit 4"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 4 || string(res.Stdout) != "ignored\n" {
			t.Fatalf("exit %d, stdout %q", res.ExitCode, res.Stdout)
		}
	})
	t.Run("no stdin reads EOF at once", func(t *testing.T) {
		res, err := sb.Exec(ctx, Spec{RunID: runID, TaskID: "1", Dir: ws,
			Args: []string{"/bin/sh", "-c", "wc -c"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(res.Stdout)) != "0" {
			t.Fatalf("stdout %q, want 0 bytes read", res.Stdout)
		}
	})
	t.Run("an argument no process can be given is refused before anything starts", func(t *testing.T) {
		for name, spec := range map[string]Spec{
			"NUL in an argument": {Args: []string{"/bin/sh", "-c", "touch started", "x\x00y"}},
			"NUL in the environment": {Args: []string{"/bin/sh", "-c", "touch started"},
				Env: []string{"ORCH_X=a\x00b"}},
			"an argument over MAX_ARG_STRLEN": {Args: []string{"/bin/sh", "-c", "touch started", strings.Repeat("x", maxArgLen+1)}},
		} {
			spec.RunID, spec.TaskID, spec.Dir = runID, "1", ws
			_, err := sb.Exec(ctx, spec, nil)
			if !errors.Is(err, ErrInput) {
				t.Errorf("%s: err = %v, want ErrInput", name, err)
			} else if len(err.Error()) > 200 {
				t.Errorf("%s: the error is %d bytes long: it echoes the input", name, len(err.Error()))
			}
		}
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			t.Error("something started")
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
