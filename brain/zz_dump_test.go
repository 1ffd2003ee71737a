package brain

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

func TestZZDump(t *testing.T) {
	var h Heuristic
	for _, f := range []string{"testdata/corpus/interpret.jsonl", "testdata/interpret_extra.jsonl"} {
		for _, c := range readJSONL[interpretCase](t, f) {
			in, _ := h.Interpret(context.Background(), c.Output)
			b, _ := json.Marshal(in)
			fmt.Printf("%s [%s] %s\n\n", c.ID, in.Via, b)
		}
	}
	for _, f := range []string{"testdata/corpus/decide.jsonl", "testdata/decide_extra.jsonl"} {
		for _, c := range readJSONL[decideCase](t, f) {
			d, _ := h.Decide(context.Background(), c.Input)
			b, _ := json.Marshal(d)
			fmt.Printf("%s sim=%.2f perm=%v %s\n\n", c.ID, d.Similarity, d.Permanent, b)
		}
	}
}
