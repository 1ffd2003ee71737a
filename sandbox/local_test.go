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

func TestLocalExec(t *testing.T) {
	l := NewLocal(LocalConfig{KillGrace: 200 * time.Millisecond})
	ctx := context.Background()

	t.Run("lines streamed and captured", func(t *testing.T) {
		var lines []string
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "echo one; echo two >&2; printf 'three'"}}, func(b []byte) {
			lines = append(lines, string(b))
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(lines, "|"); got != "one|three" {
			t.Errorf("lines = %q", got)
		}
		if string(res.Stdout) != "one\nthree" || string(res.Stderr) != "two\n" || res.ExitCode != 0 {
			t.Errorf("res = %+v", res)
		}
	})

	t.Run("megabyte line", func(t *testing.T) {
		var longest int
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo"}}, func(b []byte) {
			longest = max(longest, len(b))
		})
		if err != nil {
			t.Fatal(err)
		}
		if longest != 3000000 || len(res.Stdout) != 3000001 {
			t.Errorf("longest line %d, stdout %d", longest, len(res.Stdout))
		}
	})

	t.Run("exit code env and dir", func(t *testing.T) {
		dir := t.TempDir()
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "echo $ORCH_TASK_ID; pwd; exit 7"}, Env: []string{"ORCH_TASK_ID=1.1"}, Dir: dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := "1.1\n" + dir + "\n"
		if res.ExitCode != 7 || string(res.Stdout) != want {
			t.Errorf("res = %d %q, want 7 %q", res.ExitCode, res.Stdout, want)
		}
	})

	t.Run("timeout kills the whole group", func(t *testing.T) {
		dir := t.TempDir()
		marker := filepath.Join(dir, "survived")
		start := time.Now()
		res, err := l.Exec(ctx, Spec{
			Args:    []string{"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 60"},
			Timeout: 300 * time.Millisecond,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut {
			t.Errorf("TimedOut = false, res %+v", res)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		time.Sleep(2500 * time.Millisecond)
		if _, err := os.Stat(marker); err == nil {
			t.Error("a child of the timed-out agent survived and ran")
		}
	})

	t.Run("context cancel", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := l.Exec(cctx, Spec{Args: []string{"/bin/sh", "-c", "sleep 30"}}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("missing program", func(t *testing.T) {
		if _, err := l.Exec(ctx, Spec{Args: []string{"/no/such/agent"}}, nil); err == nil {
			t.Error("no error")
		}
		if _, err := l.Exec(ctx, Spec{}, nil); !errors.Is(err, ErrNoCommand) {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("stderr tail bounded", func(t *testing.T) {
		res, err := l.Exec(ctx, Spec{Args: []string{"/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' e >&2; echo END >&2"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stderr) != stderrTail || !bytes.HasSuffix(res.Stderr, []byte("END\n")) {
			t.Errorf("stderr %d bytes", len(res.Stderr))
		}
	})
}
