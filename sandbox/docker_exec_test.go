package sandbox

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
)

// A process that exits without reading its input makes the engine close the attached connection with orch's bytes
// unread, which Linux reports to orch's read as a reset after the output: with the exec's exit code known, the
// output is whole; without one, the engine went away mid-stream.
func TestOutputEndAfterAnUnreadInput(t *testing.T) {
	reset := fmt.Errorf("read unix @->/var/run/docker.sock: %w", syscall.ECONNRESET)
	for _, c := range []struct {
		name string
		err  error
		exit int
		want error
	}{
		{"a reset after the exec ended", reset, 4, nil},
		{"a reset with no exit code", reset, -1, reset},
		{"the end of the stream", nil, 0, nil},
		{"another error after the exec ended", io.ErrUnexpectedEOF, 0, io.ErrUnexpectedEOF},
	} {
		if got := outputEnd(c.err, c.exit); !errors.Is(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: outputEnd = %v, want %v", c.name, got, c.want)
		}
	}
}
