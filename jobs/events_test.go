package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// One body of every kind, each field set: the round trip must keep them all.
func everyKind() []Body {
	opts := []Option{{Key: "A", Label: "Redis"}, {Key: "B", Label: "In-memory"}}
	work := Work{Branch: "orch/r-1", Base: "main", Commits: 2, FilesChanged: 3, Insertions: 40, Deletions: 5}
	hop := StageHop{Handler: "codergen", Status: "success", Next: "exit", Route: "edge", Note: "done", Visit: 2, EnteredMS: 1700000000000}
	return []Body{
		RunStartedEvent{Branch: "orch/r-1", Base: "main", Plan: "p.md", Title: "T", Tasks: 2, Unit: "stage", Agent: "sim", Brain: "heuristic", Sandbox: "local",
			Permissions: "docker defaults: allow by default (30 ask rules)"},
		RunCompletedEvent{Tasks: 2, Total: 3, Unit: "stage", DurationMS: 1500, CostUSD: 0.25, InputTokens: 10, OutputTokens: 20, Work: work,
			PullRequest: "https://github.com/o/r/pull/7", Unfinished: []string{"3"}},
		RunFailedEvent{Reason: "boom", DurationMS: 3, Work: work},
		RunAbortedEvent{Reason: "wrong plan", By: "alice", DurationMS: 4, Work: work},
		RunPausedEvent{Reason: "Brain unavailable"},
		TaskStartedEvent{Title: "t", Attempt: 2, MaxAttempts: 3, Started: 4, Agent: "sim", Turn: 1, Budget: "$1.50 of $2.00 spent"},
		TaskCompletedEvent{Title: "t", Summary: "ok", CostUSD: 0.5, DurationMS: 7, Commit: "abc1234"},
		TaskFailedEvent{Title: "t", Attempt: 1, MaxAttempts: 3, Error: "e"},
		TaskForcedEvent{Title: "t", By: "bob"},
		RetryingEvent{Title: "t", Reason: "r", Guidance: "g", DelayMS: 250},
		LoopDetectedEvent{Failures: 3, Similarity: 0.9, Similar: true, LoopKind: TriggerOscillate},
		ResumedEvent{Title: "t", Guidance: "g", Resolution: "choose"},
		BrainFallbackEvent{Reason: "529"},
		SandboxErrorEvent{Error: "no docker"},
		EscalationEvent{EscalationID: "e1", Trigger: TriggerNeedsHelp, Name: "n", Priority: 40, Source: "agent",
			Question: "q?", Options: opts, Recommendation: "B", Attempt: 1, Failures: 0, Similarity: 0.1, Title: "t"},
		ResolutionEvent{EscalationID: "e1", Resolution: ResolveChoose, Key: "B", Text: "x", Reason: "y", By: "alice",
			Via: "slack", WaitSeconds: 12.5, Summary: "chose B", Trigger: TriggerNeedsHelp, Question: "q?", Visit: 1},
		EscalationTimeoutEvent{EscalationID: "e1", N: 1, Of: 2, WaitedSeconds: 3600, Question: "q?", Next: "reminding"},
		PipelineStartedEvent{Name: "g", Goal: "goal", PlanKind: "dot", Nodes: 5, Edges: 4},
		PipelineCompletedEvent{DurationMS: 9, Completed: 3},
		PipelineFailedEvent{Error: "no route", DurationMS: 9},
		StageStartedEvent{Title: "t", Handler: "codergen", TaskKind: "chat", Visit: 1, Index: 2},
		StageCompletedEvent{StageHop: hop},
		StageFailedEvent{StageHop: hop},
		StageRetryingEvent{Attempt: 2, DelayMS: 5, Reason: "timeout"},
		InterviewStartedEvent{Question: "q", QuestionType: "MULTIPLE_CHOICE", Stage: "gate", EscalationID: "e2", Options: opts, Turn: 3},
		InterviewCompletedEvent{EscalationID: "e2", Answer: "A", Label: "Approve", By: "bob", Via: "cli", WaitSeconds: 1},
		InterviewTimeoutEvent{EscalationID: "e2", Question: "q", Stage: "gate", WaitedSeconds: 60, Default: "A"},
		CheckpointSavedEvent{NodeID: "n", Last: "m", Completed: 4},
		BranchPushedEvent{Remote: "origin", Branch: "orch/r-1", Commit: "abc1234"},
		GitErrorEvent{Error: "pushing: rejected"},
		WorkspaceBusyEvent{Workspace: "/w", Run: "r-0", Status: "parked"},
		AgentActivityEvent{Calls: []string{"Bash: npm test", "Edit: src/x.go"}, More: 3},
		AttemptLostEvent{Attempt: 2, Reason: "lost", Owner: "step:r-1:3", Now: "step:r-1:3:rescue"},
	}
}

func TestEveryKindRoundTrips(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	seen := map[string]bool{}
	for _, b := range everyKind() {
		t.Run(b.Kind(), func(t *testing.T) {
			if seen[b.Kind()] {
				t.Fatalf("kind %s twice", b.Kind())
			}
			seen[b.Kind()] = true
			e := Event{RunID: "r-1", TaskID: "1.1", Time: at, Body: b}
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var back Event
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, e) {
				t.Fatalf("round trip:\n got %#v\nwant %#v\njson %s", back, e, data)
			}
			// Every field is a key of the flat object, beside the envelope.
			var flat map[string]any
			json.Unmarshal(data, &flat)
			if flat["type"] != b.Kind() || flat["run_id"] != "r-1" || flat["task_id"] != "1.1" || flat["time"] != at.Format(time.RFC3339Nano) {
				t.Fatalf("envelope: %s", data)
			}
			if n := reflect.TypeOf(b).NumField(); len(flat) < 4+n {
				t.Fatalf("%d keys for %d fields: %s", len(flat), n, data)
			}
		})
	}
	if len(seen) != len(kinds) {
		t.Fatalf("%d kinds tested, %d kinds", len(seen), len(kinds))
	}
}

// The wire format is the contract: the same bytes as the map-of-fields events orch wrote before they had types.
func TestEventJSONIsTheContract(t *testing.T) {
	e := NewEvent("r-1", "1.1", TaskFailedEvent{Title: "t", Attempt: 2, MaxAttempts: 3, Error: "boom <&>"})
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"attempt":2,"error":"boom \u003c\u0026\u003e","max_attempts":3,"run_id":"r-1","task_id":"1.1","time":"2026-01-02T03:04:05Z","title":"t","type":"task_failed"}`
	if string(data) != want {
		t.Fatalf("json =\n%s\nwant\n%s", data, want)
	}
	// A run-wide event has no task_id; optional fields that are unset are left out.
	e = NewEvent("r-1", "", ResumedEvent{Title: "t", Resolution: ResumeContinue})
	data, _ = json.Marshal(e)
	want = `{"resolution":"continue","run_id":"r-1","time":"0001-01-01T00:00:00Z","title":"t","type":"resumed"}`
	if string(data) != want {
		t.Fatalf("json =\n%s\nwant\n%s", data, want)
	}
}

// An event of a kind this orch does not know (another version wrote it) is kept whole.
func TestUnknownEventKept(t *testing.T) {
	in := `{"future":"field","n":3,"run_id":"r-1","time":"2026-01-02T03:04:05Z","type":"made_up"}`
	var e Event
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	u, ok := e.Body.(UnknownEvent)
	if !ok || e.Type() != "made_up" || u.Fields["future"] != "field" {
		t.Fatalf("decoded %#v", e)
	}
	out, _ := json.Marshal(e)
	if string(out) != in {
		t.Fatalf("re-encoded %s", out)
	}
	// A known kind whose fields do not decode is an error, not a silent zero.
	if err := json.Unmarshal([]byte(`{"type":"task_failed","attempt":"two"}`), &e); err == nil {
		t.Fatal("a task_failed with a string attempt decoded")
	}
}

func TestChangeNumbersEvents(t *testing.T) {
	r := &Run{ID: "r-1", CreatedAt: time.UnixMilli(1700000000000), EventSeq: 4}
	c := NewChange(r)
	id := c.Emit(Event{Body: RunPausedEvent{}})
	if id != "1700000000000-5" || c.Events[0].ID != id || c.Events[0].RunID != "r-1" || r.EventSeq != 5 {
		t.Fatalf("emit: id %q, %+v, seq %d", id, c.Events[0], r.EventSeq)
	}
}

func TestTriggersDescribeThemselves(t *testing.T) {
	for tr, want := range map[Trigger]struct {
		text     string
		priority int
	}{
		TriggerSecurity:  {"security", 100},
		TriggerNeedsHelp: {"the agent asked", 40},
		TriggerCustom:    {"custom trigger", 30},
		Trigger("new"):   {"new", 30},
	} {
		if tr.Text() != want.text || tr.Priority() != want.priority || tr.String() != string(tr) {
			t.Errorf("%s: %q %d", tr, tr.Text(), tr.Priority())
		}
	}
	if got := TriggerCustom.Describe("schema-change"); got != "custom trigger schema-change" {
		t.Errorf("custom named: %q", got)
	}
	if got := TriggerGate.Describe("ignored"); got != "human gate" {
		t.Errorf("gate named: %q", got)
	}
	// Every trigger orch opens has words of its own.
	for _, tr := range []Trigger{TriggerNeedsHelp, TriggerBrain, TriggerAttemptCap, TriggerPermanent, TriggerSecurity,
		TriggerConfig, TriggerValidation, TriggerCustom, TriggerGate, TriggerChat, TriggerLoop, TriggerE2E, TriggerOscillate} {
		if tr.Text() == string(tr) && tr != TriggerSecurity {
			t.Errorf("trigger %s has no text", tr)
		}
	}
}
func TestNewRunIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewRunID()
		if len(id) != 12 || seen[id] {
			t.Fatalf("bad or duplicate id %q", id)
		}
		seen[id] = true
	}
}

// A run that clones from the remote's default branch names no base: its summary says where it starts all the same.
func TestWorkOfAClonedRunNamesItsBase(t *testing.T) {
	for _, tt := range []struct {
		g    Git
		want string
	}{
		{Git{Branch: "orch/r-1", Base: "main", BaseCommit: "0123456789abcdef0123"}, "main"},
		{Git{Branch: "orch/r-1", URL: "https://x/r.git", BaseCommit: "0123456789abcdef0123"}, "0123456789ab"},
		{Git{Branch: "orch/r-1", URL: "https://x/r.git"}, "the remote's default branch"},
	} {
		if got := WorkOf(&Run{Git: &tt.g}).Base; got != tt.want {
			t.Errorf("%+v: base %q, want %q", tt.g, got, tt.want)
		}
	}
}

// A run that ended with work left uncommitted says where it is kept, beside what its branch holds: a branch with no
// commits does not read as if nothing was done.
func TestWorkLinesNameTheUncommittedWork(t *testing.T) {
	r := &Run{Git: &Git{Branch: "orch/r-1", Base: "main", Unfinished: "refs/orch/unfinished/r-1"}}
	got := strings.Join(WorkOf(r).Lines("r-1"), "\n")
	want := "Branch orch/r-1: no changes from main\nWork left uncommitted is kept at refs/orch/unfinished/r-1: git show refs/orch/unfinished/r-1"
	if got != want {
		t.Fatalf("lines:\n%s\nwant:\n%s", got, want)
	}
}
