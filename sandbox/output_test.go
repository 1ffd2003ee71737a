package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The lines handed over and what is kept do not depend on how the output is split into writes.
func TestOutputLines(t *testing.T) {
	long := strings.Repeat("x", MaxLine)
	tests := []struct {
		name    string
		printed string
		lines   []string
		cut     int
		cutLen  int64
	}{
		{"lines", "one\ntwo\n\nlast", []string{"one", "two", "", "last"}, 0, 0},
		{"a line of MaxLine bytes is whole", long + "\nend\n", []string{long, "end"}, 0, 0},
		{"one byte more is cut", long + "y\nend\n", []string{long, "end"}, 1, 1},
		{"a line that never ends", long + strings.Repeat("z", 1000), []string{long}, 1, 1000},
		{"cut, then more lines", long + "abc\n" + long + "de\nend", []string{long, long, "end"}, 2, 5},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1 << 30, 32 << 10, 4093, 1} {
			if chunk == 1 && len(tt.printed) > 1<<20 {
				continue // a byte at a time through megabytes says nothing more than 4093
			}
			t.Run(fmt.Sprintf("%s/%d", tt.name, chunk), func(t *testing.T) {
				var got []string
				o := newOutput(func(b []byte) { got = append(got, string(b)) })
				for p := []byte(tt.printed); len(p) > 0; {
					n := min(chunk, len(p))
					if w, err := o.Write(p[:n]); w != n || err != nil {
						t.Fatalf("Write = %d, %v", w, err)
					}
					p = p[n:]
				}
				o.flush()
				if !equalLines(got, tt.lines) {
					t.Errorf("lines %s, want %s", describeLines(got), describeLines(tt.lines))
				}
				var res Result
				o.fill(&res)
				if res.LinesCut != tt.cut || res.LineBytesCut != tt.cutLen || res.StdoutBytes != int64(len(tt.printed)) {
					t.Errorf("cut %d lines, %d bytes, of %d printed; want %d, %d, %d", res.LinesCut, res.LineBytesCut,
						res.StdoutBytes, tt.cut, tt.cutLen, len(tt.printed))
				}
				if len(o.line) > MaxLine || cap(o.line) > MaxLine {
					t.Errorf("the line buffer grew to %d bytes (capacity %d)", len(o.line), cap(o.line))
				}
			})
		}
	}
}

// Stdout keeps its first and last megabytes and says how much is missing between them.
func TestOutputKept(t *testing.T) {
	for _, size := range []int{0, 10, keptHead, keptHead + keptTail, keptHead + keptTail + 1, 3*keptTail + 12345} {
		printed := numbered(size)
		for _, chunk := range []int{1 << 30, 32 << 10, 777} {
			o := newOutput(nil)
			for p := printed; len(p) > 0; p = p[min(chunk, len(p)):] {
				o.Write(p[:min(chunk, len(p))])
			}
			var res Result
			o.fill(&res)
			checkKept(t, fmt.Sprintf("%d bytes in writes of %d", size, chunk), res, printed)
		}
	}
}

// checkKept checks res.Stdout against everything the process printed.
func checkKept(t *testing.T, what string, res Result, printed []byte) {
	t.Helper()
	if res.StdoutBytes != int64(len(printed)) {
		t.Errorf("%s: StdoutBytes %d, printed %d", what, res.StdoutBytes, len(printed))
	}
	if len(printed) <= keptHead+keptTail {
		if !bytes.Equal(res.Stdout, printed) || res.StdoutNotKept != 0 {
			t.Errorf("%s: %d bytes kept (%d not kept), want all %d", what, len(res.Stdout), res.StdoutNotKept, len(printed))
		}
		return
	}
	dropped := len(printed) - keptHead - keptTail
	marker := fmt.Sprintf("\n[… %d bytes of output not kept …]\n", dropped)
	head, tail := printed[:keptHead], printed[len(printed)-keptTail:]
	switch {
	case res.StdoutNotKept != int64(dropped):
		t.Errorf("%s: StdoutNotKept %d, want %d", what, res.StdoutNotKept, dropped)
	case len(res.Stdout) != keptHead+len(marker)+keptTail:
		t.Errorf("%s: %d bytes kept, want %d", what, len(res.Stdout), keptHead+len(marker)+keptTail)
	case !bytes.Equal(res.Stdout[:keptHead], head):
		t.Errorf("%s: the head kept is not the start of the output: %.40q", what, res.Stdout)
	case string(res.Stdout[keptHead:keptHead+len(marker)]) != marker:
		t.Errorf("%s: no marker %q after the head: %.80q", what, marker, res.Stdout[keptHead:])
	case !bytes.Equal(res.Stdout[keptHead+len(marker):], tail):
		t.Errorf("%s: the tail kept is not the end of the output: …%q", what, res.Stdout[len(res.Stdout)-40:])
	}
}

// numbered is n bytes of numbered lines: any shift of a kept part shows.
func numbered(n int) []byte {
	b := make([]byte, 0, n+16)
	for i := 1; len(b) < n; i++ {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b[:n]
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// describeLines says what lines are without printing megabytes.
func describeLines(lines []string) string {
	var parts []string
	for _, l := range lines {
		if len(l) > 20 {
			l = fmt.Sprintf("%.10s…(%d bytes)", l, len(l))
		}
		parts = append(parts, strconv.Quote(l))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// execScript runs a shell script in a sandbox: what the output tests need of either.
type execScript func(t *testing.T, script string, onLine func([]byte)) (Result, error)

// testBoundedOutput checks, through a sandbox, that an agent's output is kept within its bounds whatever it prints:
// millions of lines, a line of 20 MB, a line of 60 MB that never ends. The lines handed over are what it printed, the
// long ones cut to MaxLine; Stdout is its first and last megabytes.
func testBoundedOutput(t *testing.T, run execScript) {
	const longLine, endless = 20_000_000, 60_000_000

	t.Run("lines and a long line", func(t *testing.T) {
		// The numbers 1 to 1,000,000, a line of 20 MB, the numbers to 1,300,000: head and tail are numbers.
		script := fmt.Sprintf("seq 1 1000000; head -c %d /dev/zero | tr '\\0' x; echo; seq 1000001 1300000", longLine)
		var printed bytes.Buffer
		for i := 1; i <= 1_000_000; i++ {
			fmt.Fprintln(&printed, i)
		}
		printed.WriteString(strings.Repeat("x", longLine) + "\n")
		for i := 1_000_001; i <= 1_300_000; i++ {
			fmt.Fprintln(&printed, i)
		}
		n, bad := 0, ""
		res, err := run(t, script, func(b []byte) {
			defer func() { n++ }()
			if bad != "" {
				return
			}
			switch {
			case n == 1_000_000:
				if len(b) != MaxLine || strings.Trim(string(b), "x") != "" {
					bad = fmt.Sprintf("line %d: %d bytes, want %d of x", n+1, len(b), MaxLine)
				}
			case n < 1_000_000 && string(b) != strconv.Itoa(n+1), n > 1_000_000 && string(b) != strconv.Itoa(n):
				bad = fmt.Sprintf("line %d is %.20q", n+1, b)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if bad != "" || n != 1_300_001 {
			t.Errorf("%d lines handed over, want 1,300,001; %s", n, bad)
		}
		if res.ExitCode != 0 || res.LinesCut != 1 || res.LineBytesCut != longLine-MaxLine {
			t.Errorf("exit %d, %d lines cut of %d bytes; want 0, 1, %d", res.ExitCode, res.LinesCut, res.LineBytesCut,
				longLine-MaxLine)
		}
		checkKept(t, "stdout", res, printed.Bytes())
	})

	t.Run("a line that never ends", func(t *testing.T) {
		script := fmt.Sprintf("printf start; head -c %d /dev/zero | tr '\\0' y; printf end", endless)
		var lines []int
		var first string
		res, err := run(t, script, func(b []byte) {
			if len(lines) == 0 {
				first = string(b[:min(len(b), 10)])
			}
			lines = append(lines, len(b))
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 1 || lines[0] != MaxLine || first != "startyyyyy" {
			t.Errorf("lines handed over: %v starting %q; want one of %d bytes, starting with the output", lines, first, MaxLine)
		}
		total := len("start") + endless + len("end")
		if res.LinesCut != 1 || res.LineBytesCut != int64(total-MaxLine) {
			t.Errorf("%d lines cut, %d bytes; want 1, %d", res.LinesCut, res.LineBytesCut, total-MaxLine)
		}
		printed := []byte("start" + strings.Repeat("y", endless) + "end")
		checkKept(t, "stdout", res, printed)
	})
}

func TestLocalOutputBounded(t *testing.T) {
	t.Parallel()
	l := NewLocal(LocalConfig{KillGrace: 200 * time.Millisecond, Shim: testShim()})
	testBoundedOutput(t, func(t *testing.T, script string, onLine func([]byte)) (Result, error) {
		return l.Exec(context.Background(), Spec{Args: []string{"/bin/sh", "-c", script}, Timeout: 5 * time.Minute}, onLine)
	})
}

func TestDockerOutputBounded(t *testing.T) {
	d := newTestDocker(t, DockerConfig{})
	testBoundedOutput(t, func(t *testing.T, script string, onLine func([]byte)) (Result, error) {
		return d.Exec(context.Background(), Spec{RunID: newRunID(t, d), Dir: workspace(t, ""),
			Args: []string{"/bin/sh", "-c", script}, Timeout: 5 * time.Minute}, onLine)
	})
}
