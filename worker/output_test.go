package worker

import (
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/sandbox"
)

// An agent whose lines are longer than orch reads fails with an error that says so: the answer may have been in the
// part that was cut, and "the agent exited with code 1" alone would hide why it was never read.
func TestLinesCutAreReported(t *testing.T) {
	rdb := clients(t)["miniredis"]
	sh := script(t, `head -c 30000000 /dev/zero | tr '\0' x; echo; echo "ERROR: build failed"; exit 1`)
	h := newHarness(t, rdb, sh, nil)
	r := h.newRun(t, "1.1")
	h.process(t, queue.TypeStart, queue.Payload{RunID: r.ID})
	if err := h.process(t, queue.TypeStep, queue.Payload{RunID: r.ID, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	got := h.get(t, r.ID).Tasks[0]
	if len(got.Attempts) != 1 {
		t.Fatalf("%d attempts", len(got.Attempts))
	}
	want := "[25 MB of the agent's output not kept: 1 line longer than 4 MiB was cut]"
	if sandbox.MaxLine != 4<<20 || !strings.Contains(got.Attempts[0].Error, want) {
		t.Errorf("the attempt's error does not say %q: %.300q", want, got.Attempts[0].Error)
	}
}

func TestOutputNote(t *testing.T) {
	for _, tt := range []struct {
		lines int
		bytes int64
		want  string
	}{
		{1, 1, "[1 byte of the agent's output not kept: 1 line longer than 4 MiB was cut]"},
		{2, 123_456, "[123 kB of the agent's output not kept: 2 lines longer than 4 MiB were cut]"},
		{1, 2_345_678, "[2.3 MB of the agent's output not kept: 1 line longer than 4 MiB was cut]"},
		{3, 312_345_678, "[312 MB of the agent's output not kept: 3 lines longer than 4 MiB were cut]"},
	} {
		if got := outputNote(sandbox.Result{LinesCut: tt.lines, LineBytesCut: tt.bytes}); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
