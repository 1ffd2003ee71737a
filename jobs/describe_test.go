package jobs

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/descriptions.golden")

// Every kind orch writes is in everyKind, and describes itself: a text, a level, and for a kind people see, a mark.
// A new kind of event fails here until it is described and its description is in the golden file.
func TestEveryKindIsDescribed(t *testing.T) {
	listed := map[string]bool{}
	for _, b := range everyKind() {
		listed[b.Kind()] = true
	}
	for k := range kinds {
		if !listed[k] {
			t.Errorf("kind %s is not in everyKind: give it a body with every field set", k)
		}
	}
	for _, b := range everyKind() {
		for _, e := range []Event{NewEvent("r-1", "1.1", b), NewEvent("r-1", "", zero(b))} {
			d := e.Describe()
			if strings.TrimSpace(d.String()) == "" {
				t.Errorf("%s (%+v) has no text", b.Kind(), e.Body)
			}
			if strings.ContainsAny(d.String()+d.Detail, "\n\r") {
				t.Errorf("%s: text or detail on more than one line: %q / %q", b.Kind(), d, d.Detail)
			}
			if !d.Quiet && d.Level >= slog.LevelInfo && d.Mark == MarkNone {
				t.Errorf("%s is shown to people without a mark", b.Kind())
			}
		}
	}
}

// zero is a body of b's kind with no field set: what an older orch's event, or a sparse one, reads as.
func zero(b Body) Body {
	var e Event
	if err := e.UnmarshalJSON([]byte(`{"type":"` + b.Kind() + `"}`)); err != nil {
		panic(err)
	}
	return e.Body
}

// The descriptions of every kind, as every surface shows them. go test ./jobs -run TestDescriptions -update rewrites
// the file after a deliberate change of wording.
func TestDescriptions(t *testing.T) {
	var b strings.Builder
	for _, body := range append(everyKind(), UnknownEvent{Type: "from_the_future"},
		RunCompletedEvent{Tasks: 1}, TaskFailedEvent{Attempt: 4, MaxAttempts: 3, Error: "again\nand again"},
		LoopDetectedEvent{Failures: 3, Similarity: 0.83, Similar: true}, LoopDetectedEvent{Failures: 3},
		LoopDetectedEvent{Failures: 4, LoopKind: TriggerE2E}, ResumedEvent{Resolution: ResumeContinue},
		TaskStartedEvent{Title: "t", Attempt: 1, MaxAttempts: 3, Agent: "claude"},
		EscalationEvent{Trigger: TriggerGate, Question: "Review the plan"}, EscalationEvent{Trigger: TriggerChat, Title: "chat"},
		StageFailedEvent{StageHop{Handler: "codergen", Status: "fail", Next: "fix", Route: "retry_target"}},
		StageCompletedEvent{StageHop{Handler: "conditional", Status: "success", Next: "exit"}},
		StageCompletedEvent{StageHop{Handler: "exit", Route: "goal_gate", Note: "tests not run", Next: "work"}},
		StageCompletedEvent{StageHop{Handler: "wait.human", Status: "success", Note: "[A] Approve", Next: "apply"}},
		AgentActivityEvent{Calls: []string{"Read: a", "Read: b", "Edit: c", "Bash: go test"}},
		PipelineStartedEvent{Name: "plan", PlanKind: "milestone", Nodes: 4, Edges: 3},
		RunAbortedEvent{Reason: "timed out"}) {
		e := NewEvent("r-1", "1.1", body)
		e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		d := e.Describe()
		fmt.Fprintf(&b, "%s\t%s", body.Kind(), d)
		for _, s := range d.Text {
			if s.Person {
				fmt.Fprintf(&b, "\t[person %s via %q]", s.Text, s.Via)
			}
		}
		fmt.Fprintf(&b, "\n\tlevel=%s quiet=%t mark=%q moment=%s\n", d.Level, d.Quiet, d.Mark, d.Moment)
		if d.Detail != "" {
			fmt.Fprintf(&b, "\tdetail: %s\n", d.Detail)
		}
		for _, m := range d.More {
			fmt.Fprintf(&b, "\tmore: %s\n", m)
		}
	}
	path := filepath.Join("testdata", "descriptions.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./jobs -run TestDescriptions -update writes it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("descriptions differ from %s (rerun with -update after a deliberate change):\n%s", path, got)
	}
}

func TestWords(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Count(1, "task"), "1 task"},
		{Count(0, "stage"), "0 stages"},
		{Count(2, "reply"), "2 replies"},
		{Count(3, "day"), "3 days"},
		{Count(2, "pass"), "2 passes"},
		{Tally{Done: 3, Total: 4, Unit: "stage"}.String(), "3 of 4 stages done"},
		{Tally{Total: 1}.Size(), "1 task"},
		{AttemptText(0, 3), ""},
		{AttemptText(2, 3), "attempt 2/3"},
		{AttemptText(4, 3), "attempt 4/3"},
		{AttemptText(2, 0), "attempt 2"},
		{Work{FilesChanged: 1, Insertions: 1}.Diffstat(), "1 file changed, 1 insertion(+)"},
		{Work{FilesChanged: 2, Deletions: 3}.Diffstat(), "2 files changed, 3 deletions(-)"},
		{AgentName("cmd:codex exec {prompt}"), "the agent command"},
		{ViaText("cli"), "at the terminal"},
		{ViaText("github"), "on GitHub"},
		{ViaText("mcp"), "via mcp"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	r := &Run{Graph: "digraph {}", Tasks: []*Task{{Status: TaskCompleted}, {Status: TaskForced}, {Status: TaskPending}}}
	if got := r.Tally(); got != (Tally{Done: 2, Total: 3, Unit: "stage"}) {
		t.Errorf("tally %+v", got)
	}
}
