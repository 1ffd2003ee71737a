package pipeline

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestExtractVerification(t *testing.T) {
	plan := "# M\n\n## Task 1.1: Build\n\nBuild it.\n\n## E2E Test Scenario\n\nRun the app and check:\n\n" +
		"```bash\n./app --selftest\ncurl -fs localhost:8080/health\n```\n\n### Expected\n\nAll green.\n\n" +
		"## Notes\n\nnot verification\n\n## Milestone Verification\n\n```\nmake e2e\n```\n"
	v, ok := ExtractVerification(plan)
	if !ok {
		t.Fatal("no verification found")
	}
	want := []string{"./app --selftest\ncurl -fs localhost:8080/health", "make e2e"}
	if !reflect.DeepEqual(v.Commands, want) || v.Line != 7 {
		t.Fatalf("commands %q line %d", v.Commands, v.Line)
	}
	if !strings.Contains(v.Text, "### Expected") || !strings.Contains(v.Text, "All green.") || strings.Contains(v.Text, "not verification") ||
		!strings.HasPrefix(v.Text, "## E2E Test Scenario") {
		t.Fatalf("text:\n%s", v.Text)
	}
	if _, ok := ExtractVerification("# M\n\n## Task 1.1: Build\n\n```\n## E2E Test Scenario\n```\n"); ok {
		t.Fatal("a heading inside a fence is no section")
	}
	if _, ok := ExtractVerification("# M\n\n## Task 1.1: Build\n"); ok {
		t.Fatal("verification found in a plan without one")
	}
}

// The seeds' own verification sections are found, with their command blocks.
func TestExtractVerificationSeeds(t *testing.T) {
	data, err := os.ReadFile("testdata/m4-escalation-loop-detection.md")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := ExtractVerification(string(data))
	if !ok || len(v.Commands) == 0 || !strings.Contains(v.Text, "Scenario A") {
		t.Fatalf("m4 seed: ok %v, %d command blocks", ok, len(v.Commands))
	}
}
