package brain

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// The labelled cases a brain is measured against (TestEval in eval_test.go scores them): testdata/corpus/ is
// the shared set, a copy of the project's corpus; testdata/eval/ is this package's own larger set, split into
// the train files the heuristic was tuned on and held-out files it never was (see testdata/eval/README.md).

type interpretCase struct {
	ID     string `json:"id"`
	Expect struct {
		Status Status `json:"status"`
		// Options and Recommendation are labelled on the needs_help cases of the sets that score extraction
		// (nil Options: not labelled): the exact button labels in order, and the recommended option's label (or,
		// when it recommends something that is not an option, what it recommends).
		Options        []string `json:"options"`
		Recommendation *string  `json:"recommendation"`
	} `json:"expect"`
	Output string `json:"output"`
	Note   string `json:"note,omitempty"`
	// keys are a question's options and recommendation labelled as corpus2 labels them (keyLabels); nil elsewhere.
	keys *keyLabels
}

// keyLabels are corpus2's labels of a question (its interpret_extract.jsonl): a key phrase per option, in order, each
// a case-insensitive part of the option at its place; whether the options were listed or inline in prose; and
// regular expressions, any of which matches the lower-cased recommendation (none: no recommendation).
type keyLabels struct {
	ID             string   `json:"id"`
	Options        []string `json:"options"`
	Kind           string   `json:"options_kind"`
	Recommendation []string `json:"recommendation"`
}

type decideCase struct {
	ID     string `json:"id"`
	Expect struct {
		Decision Verdict `json:"decision"`
	} `json:"expect"`
	Input DecideInput `json:"input"`
	Note  string      `json:"note,omitempty"`
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening corpus: %v", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return out
}
