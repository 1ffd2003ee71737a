package brain

import (
	"fmt"
	"strings"
	"testing"
)

// output40KB is a long agent transcript of the usual shape: a build log with colours, a test run, prose about
// the work, and a short wrap-up at the end.
func output40KB() string {
	var b strings.Builder
	b.WriteString("I'll start by reading the failing handler and its tests.\n\n")
	for i := 0; b.Len() < 30<<10; i++ {
		fmt.Fprintf(&b, "\x1b[32m✓\x1b[0m src/orders/handler_%d.test.ts (12 tests) %dms\n", i, 20+i%50)
		fmt.Fprintf(&b, "  retry policy: a timeout on attempt %d is retried; a failure of the store is an error returned to the caller.\n", i)
		if i%7 == 0 {
			b.WriteString("\nThe handler now validates the payload before it writes. Should it also trim whitespace? Yes, it does so in `normalise()`.\n\n")
		}
	}
	b.WriteString("\n```\n$ go test ./...\n")
	for i := 0; b.Len() < 38<<10; i++ {
		fmt.Fprintf(&b, "ok  \tgithub.com/acme/shop/internal/pkg%d\t0.%03ds\n", i, i%1000)
	}
	b.WriteString("```\n\n Test Files  42 passed (42)\n      Tests  504 passed (504)\n\nAll tests pass; the change is committed.\n")
	return b.String()
}

// BenchmarkInterpret40KB is the time of one judgement of a long output (the budget is 50 ms). It is a benchmark, not
// a test with a bound: on a machine shared with other work a wall-clock bound fails for reasons of its own.
func BenchmarkInterpret40KB(b *testing.B) {
	out := output40KB()
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		interpret(out)
	}
}
