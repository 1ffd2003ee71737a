package brain

import (
	"fmt"
	"strings"
	"testing"
)

func TestErrorSimilarityReadsTheFailureNotTheWords(t *testing.T) {
	for _, c := range []struct {
		name    string
		a, b    string
		atLeast float64 // -1: no lower bound
		atMost  float64 // -1: no upper bound
	}{
		{"another line, duration and closing sentence",
			"--- FAIL: TestQuote (0.02s)\n    quote_test.go:31: got \"a,b\", want \"\\\"a,b\\\"\"\nexit status 1 The task could not be completed.",
			"Still failing.\n--- FAIL: TestQuote (0.05s)\n    quote_test.go:35: got \"a,b\", want \"\\\"a,b\\\"\"",
			0.9, -1},
		{"a full traceback and its summary line",
			"Traceback (most recent call last):\n  File \"/tmp/tmpab12cd/x.py\", line 3, in <module>\n    import toml\nModuleNotFoundError: No module named 'toml'",
			"I tried again: ModuleNotFoundError: No module named 'toml'",
			0.9, -1},
		{"addresses, goroutines and timestamps",
			"2026-01-02T10:11:12Z panic: close of closed channel\ngoroutine 12 [running]:\nmain.(*Pool).Stop(0xc000010000)\n\t/src/pool.go:40 +0x1d",
			"2026-01-03T09:00:01Z panic: close of closed channel\ngoroutine 31 [running]:\nmain.(*Pool).Stop(0xc0000a8000)\n\t/src/pool.go:44 +0x25",
			0.9, -1},
		{"the same shape for another test",
			"--- FAIL: TestQuoteComma (0.00s)\n    q_test.go:10: got \"x\", want \"y\"",
			"--- FAIL: TestQuoteNewline (0.00s)\n    q_test.go:10: got \"x\", want \"y\"",
			-1, 0.5},
		{"one test failing another way",
			"E   KeyError: 'id'\nFAILED tests/test_a.py::test_load - KeyError: 'id'",
			"E   TypeError: load() takes 1 positional argument\nFAILED tests/test_a.py::test_load - TypeError: load() takes 1 positional argument",
			-1, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ErrorSimilarity(c.a, c.b)
			if c.atLeast >= 0 && got < c.atLeast || c.atMost >= 0 && got > c.atMost {
				t.Errorf("ErrorSimilarity = %.2f, want within [%v, %v]", got, c.atLeast, c.atMost)
			}
			if back := ErrorSimilarity(c.b, c.a); back < got-0.15 || back > got+0.15 {
				t.Errorf("not symmetric enough: %.2f one way, %.2f the other", got, back)
			}
		})
	}
}

// An attempt's error is the failure it reports, wherever the agent put it, not its closing sentence.
func TestTheErrorOfAnAttemptIsItsFailure(t *testing.T) {
	out := "I ran the suite again. `test_sum` still fails with `AssertionError: assert 3 == 4` and I could not find why.\n\nexit status 1\nThe task could not be completed."
	got := interpret(out)
	if got.Status != StatusFailed || !strings.HasPrefix(got.Error, "AssertionError: assert 3 == 4") {
		t.Errorf("Error = %q (status %s), want it to start with the assertion", got.Error, got.Status)
	}
	if strings.Contains(got.Error, "\uE000") {
		t.Errorf("Error = %q holds a hidden span", got.Error)
	}
	// Text that reads like success from a process that failed keeps the agent's words.
	if f := FailureOf("Done. I applied the guidance.\nAll good."); !strings.Contains(f, "I applied the guidance") {
		t.Errorf("FailureOf = %q, want the agent's last lines", f)
	}
	if q := briefError("Failed: FAILED t.py::test_x - KeyError: 'id'; exit status 1; the agent exited with code 1"); q != "FAILED t.py::test_x - KeyError: 'id'" {
		t.Errorf("briefError = %q, want the failure without orch's prefix and the process's parts", q)
	}
}

// Two failures ten times as long as the 4 KiB orch keeps of each: the cost stays bounded (key lines are capped).
func BenchmarkErrorSimilarityLong(b *testing.B) {
	var x, y strings.Builder
	for i := range 400 {
		fmt.Fprintf(&x, "--- FAIL: TestCase%d (0.0%ds)\n    case_test.go:%d: got %d, want %d\n", i, i%9, i+10, i, i+1)
		fmt.Fprintf(&y, "--- FAIL: TestCase%d (0.0%ds)\n    case_test.go:%d: got %d, want %d\n", i, (i+3)%9, i+12, i, i+1)
	}
	for b.Loop() {
		ErrorSimilarity(x.String(), y.String())
	}
}
