package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// The verdicts on an attempt, from the seeds' scenarios (m4: A the agent asks, B the loop stops at the cap, C
// guidance does not help) and the escalation triggers of 041c.
func TestJudgeAttempt(t *testing.T) {
	failed := func(err string) brain.Interpretation {
		return brain.Interpretation{Status: brain.StatusFailed, Error: err}
	}
	retry := &brain.Decision{Decision: brain.Retry, Reason: "first failure", GuidanceForRetry: "read the assertion"}
	escalate := &brain.Decision{Decision: brain.Escalate, Reason: "stuck in a loop"}
	permanent := &brain.Decision{Decision: brain.Escalate, Reason: "the API key is invalid", Permanent: true}
	never := func() bool { panic("the route was asked about a failure that does not stop") }
	yes := func() bool { return true }
	custom := escalation.Spec{Trigger: jobs.TriggerCustom, Name: "schema-change", Priority: 75, Question: "Dropped a table?"}
	cases := []struct {
		name     string
		f        facts
		kind     verdictKind
		failed   bool
		status   string
		triggers string // the triggers asked, in the verdict's order
		loop     *jobs.LoopDetectedEvent
		question string // a part of the first question
	}{
		{name: "A: the agent asks", f: facts{interp: brain.Interpretation{Status: brain.StatusNeedsHelp, Question: "Which cache?",
			Options: []string{"A) Redis", "B) In-memory"}, Recommendation: "B"}},
			kind: vEscalate, status: "needs_help", triggers: "needs_help", question: "Which cache?"},
		{name: "the task completes", f: facts{interp: brain.Interpretation{Status: brain.StatusCompleted}},
			kind: vComplete, status: "completed"},
		{name: "B: a first failure is retried with the brain's guidance", f: facts{interp: failed("test fails"),
			decision: retry, similarity: 1, routed: never},
			kind: vRetry, failed: true, status: "failed"},
		{name: "B: the third similar failure stops at the cap", f: facts{failures: 2, interp: failed("test fails"),
			decision: retry, similarity: 0.87, routed: func() bool { return false }},
			kind: vEscalate, failed: true, status: "failed", triggers: "attempt_cap",
			loop:     &jobs.LoopDetectedEvent{Failures: 3, Similarity: 0.87, Similar: true},
			question: "Task 1.1 failed 3 times with similar errors (error similarity 87%). Please investigate"},
		{name: "C: dissimilar failures stop at the cap too, said so", f: facts{failures: 2, interp: failed("x"),
			decision: escalate, similarity: 0.3, routed: func() bool { return false }},
			kind: vEscalate, failed: true, status: "failed", triggers: "attempt_cap",
			loop:     &jobs.LoopDetectedEvent{Failures: 3, Similarity: 0.3},
			question: "Task 1.1 failed 3 times (error similarity 30%). Please investigate and provide guidance.\nBrain: stuck in a loop"},
		{name: "the brain sees the loop before the cap", f: facts{failures: 1, interp: failed("same"), decision: escalate,
			similarity: 0.95, routed: func() bool { return false }},
			kind: vEscalate, failed: true, status: "failed", triggers: "brain",
			loop: &jobs.LoopDetectedEvent{Failures: 2, Similarity: 0.95, Similar: true}, question: "failed 2 times with similar errors"},
		{name: "an error no retry can fix", f: facts{interp: failed("401"), decision: permanent, similarity: 1,
			routed: func() bool { return false }},
			kind: vEscalate, failed: true, status: "failed", triggers: "permanent",
			question: "Task 1.1 failed and should not be retried as is: the API key is invalid"},
		{name: "the brain escalates a failure unlike the last", f: facts{failures: 1, interp: failed("new"), decision: escalate,
			similarity: 0.2, routed: func() bool { return false }},
			kind: vEscalate, failed: true, status: "failed", triggers: "brain", question: "should not be retried as is: stuck in a loop"},
		{name: "a secret in completed work holds it", f: facts{interp: brain.Interpretation{Status: brain.StatusCompleted},
			secrets: []string{"aws-access-key"}},
			kind: vHold, status: "held", triggers: "security", question: "contains what looks like a secret (aws-access-key)"},
		{name: "completed work whose agent redirected git holds it", f: facts{interp: brain.Interpretation{Status: brain.StatusCompleted},
			tampered: []string{"the worktree's .git was replaced by a file that points git elsewhere (gitdir: .evil)"}},
			kind: vHold, status: "held", triggers: "security", question: "changed git's files outside its own work"},
		{name: "work that adds a secret to the repository holds it", f: facts{interp: brain.Interpretation{Status: brain.StatusCompleted},
			leaked: []string{"github-token"}},
			kind: vHold, status: "held", triggers: "security", question: "adds what looks like a secret to the repository (github-token)"},
		{name: "a failure with a tampered git asks instead of a retry", f: facts{interp: failed("x"), decision: retry,
			tampered: []string{"the worktree's .git/commondir was added, naming /"}, routed: never},
			kind: vEscalate, failed: true, status: "failed", triggers: "security", question: "commondir was added"},
		{name: "a custom trigger on a failure asks instead of a retry", f: facts{interp: failed("x"), decision: retry,
			custom: []escalation.Spec{custom}, routed: never},
			kind: vEscalate, failed: true, status: "failed", triggers: "custom", question: "Dropped a table?"},
		{name: "the agent asks and a secret leaked: both asked", f: facts{interp: brain.Interpretation{Status: brain.StatusNeedsHelp,
			Question: "Which?"}, secrets: []string{"slack-token"}},
			kind: vEscalate, status: "needs_help", triggers: "security needs_help"},
		{name: "a failure that stops goes where the pipeline routes it", f: facts{failures: 2, interp: failed("x"),
			decision: retry, routed: yes},
			kind: vRoute, failed: true, status: "failed"},
		{name: "the brain's escalation follows the route too", f: facts{interp: failed("x"), decision: permanent, routed: yes},
			kind: vRoute, failed: true, status: "failed"},
		{name: "a routed failure that leaked a secret asks", f: facts{failures: 2, interp: failed("x"), decision: retry,
			routed: yes, secrets: []string{"jwt"}},
			kind: vEscalate, failed: true, status: "failed", triggers: "security attempt_cap",
			loop: &jobs.LoopDetectedEvent{Failures: 3}},
		{name: "the brain unavailable pauses the run", f: facts{unavailable: true, interp: failed("x")}, kind: vPause},
		// What a person let through and orch cannot take back is not run again without them.
		{name: "a failure after a push a person allowed asks instead of a retry", f: facts{interp: failed("x"),
			decision: retry, routed: never, effects: []string{"`Bash: git push --force origin main` (allowed for this run: Bash(git push:*))"}},
			kind: vEscalate, failed: true, status: "failed", triggers: "brain",
			question: "failed after running what a person let through, with effects beyond its worktree:\n- `Bash: git push --force origin main` (allowed for this run: Bash(git push:*))"},
		{name: "an answer the brain cannot read is a question about the attempt", f: facts{output: "Pushed it.",
			interp:  brain.Interpretation{Status: brain.StatusNeedsHelp, Question: "The agent's result is unclear. Please review the output and advise."},
			effects: []string{"`Bash: git push origin main` (allowed once by a person)"}},
			kind: vEscalate, status: "needs_help", triggers: "needs_help",
			question: "> Pushed it.\n\nAccept its work as completed"},
		{name: "the agent could not run", f: facts{sandboxErr: "exec: claude: not found"},
			kind: vSandboxError, status: "error", triggers: "config", question: "Task 1.1 could not run: exec: claude: not found"},
		// A prompt no argument can hold is nothing a person can fix in the configuration: never a config escalation.
		{name: "the agent could not be given its input", f: facts{inputErr: true,
			sandboxErr: "building the cmd command: template command: the agent's input cannot be passed to its process: the prompt holds a NUL byte"},
			kind: vSandboxError, status: "error", triggers: "permanent", question: "Task 1.1 cannot be given to the agent: building"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.taskID, tt.f.threshold = "1.1", 0.8
			if tt.f.maxAttempts == 0 {
				tt.f.maxAttempts = 3
			}
			v := judgeAttempt(tt.f)
			var trig []string
			for _, s := range v.specs {
				trig = append(trig, string(s.Trigger))
			}
			if v.kind != tt.kind || v.failed != tt.failed || v.status != tt.status || strings.Join(trig, " ") != tt.triggers {
				t.Fatalf("verdict kind %d failed %t status %q triggers %q; want %d %t %q %q", v.kind, v.failed, v.status,
					strings.Join(trig, " "), tt.kind, tt.failed, tt.status, tt.triggers)
			}
			if (v.loop == nil) != (tt.loop == nil) || v.loop != nil && *v.loop != *tt.loop {
				t.Fatalf("loop %+v, want %+v", v.loop, tt.loop)
			}
			if tt.question != "" && !strings.Contains(v.specs[0].Question, tt.question) {
				t.Fatalf("question %q lacks %q", v.specs[0].Question, tt.question)
			}
			for _, s := range v.specs {
				if tt.kind == vHold && !s.Held {
					t.Fatalf("held spec not marked held: %+v", s)
				}
			}
			if tt.kind == vRetry && (v.guidance != "read the assertion" || v.reason != "first failure") {
				t.Fatalf("retry guidance %q reason %q", v.guidance, v.reason)
			}
		})
	}
}

func TestJudgeTimeout(t *testing.T) {
	rec := &jobs.Escalation{Trigger: jobs.TriggerNeedsHelp, Options: []jobs.Option{{Key: "A"}, {Key: "B"}}, Recommendation: "B"}
	noRec := &jobs.Escalation{Trigger: jobs.TriggerAttemptCap}
	gate := &jobs.Escalation{Trigger: jobs.TriggerGate, Options: []jobs.Option{{Key: "A"}, {Key: "R"}}, Default: "R"}
	ownWithDefault := &jobs.Escalation{Trigger: jobs.TriggerGate, Timeout: time.Minute, Default: "A"}
	ownNoDefault := &jobs.Escalation{Trigger: jobs.TriggerGate, Timeout: time.Minute}
	takeDefault := jobs.EscalationPolicy{TimeoutDefault: true}
	for _, tt := range []struct {
		name   string
		e      *jobs.Escalation
		policy jobs.EscalationPolicy
		n      int
		want   timeoutVerdict
	}{
		{"a gate's own limit takes its default choice", ownWithDefault, jobs.EscalationPolicy{}, 1,
			timeoutVerdict{resolve: &escalation.Request{Type: jobs.ResolveChoose, Key: "A"}, ownLimit: true}},
		{"a gate's own limit with no default asks again", ownNoDefault, jobs.EscalationPolicy{}, 1,
			timeoutVerdict{resolve: &escalation.Request{Type: jobs.ResolveRetry}, ownLimit: true}},
		{"the policy takes the recommendation", rec, takeDefault, 1,
			timeoutVerdict{resolve: &escalation.Request{Type: jobs.ResolveChoose, Key: "B"}}},
		{"a gate's default is its default choice, not its first", gate, takeDefault, 1,
			timeoutVerdict{resolve: &escalation.Request{Type: jobs.ResolveChoose, Key: "R"}}},
		{"TIMEOUT, then a reminder", noRec, takeDefault, 1, timeoutVerdict{reminders: 2, next: "reminding", remind: true}},
		{"after the reminders, still waiting", rec, jobs.EscalationPolicy{Reminders: 3}, 3, timeoutVerdict{reminders: 3, next: "still waiting"}},
		{"after the reminders, the abort fallback", rec, jobs.EscalationPolicy{Fallback: "abort"}, 2,
			timeoutVerdict{reminders: 2, next: "aborting the run", abort: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeTimeout(tt.e, tt.policy, tt.n)
			if (got.resolve == nil) != (tt.want.resolve == nil) || got.resolve != nil && *got.resolve != *tt.want.resolve {
				t.Fatalf("resolve %+v, want %+v", got.resolve, tt.want.resolve)
			}
			got.resolve, tt.want.resolve = nil, nil
			if got != tt.want {
				t.Fatalf("verdict %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestE2EVerdict(t *testing.T) {
	a, b := "FAIL: TestLogin: cookie missing", "FAIL: TestLogout: CSRF token rejected after the session ended"
	c := "FAIL: webhook timed out after 30s waiting for the payment service to answer"
	for _, tt := range []struct {
		name     string
		errs     []string
		limit    int
		trigger  jobs.Trigger
		question string
	}{
		{"a first failure goes to the fix", []string{a}, 5, "", ""},
		{"two different failures go on", []string{a, b}, 5, "", ""},
		{"the same failure three times", []string{a, a, a}, 5, jobs.TriggerOscillate, "failed 3 times with the same failure"},
		{"fix A breaks B, fix B breaks A", []string{a, b, a}, 5, jobs.TriggerOscillate, "the fixes alternate between two failures"},
		{"the fixes run out", []string{a, b, c}, 2, jobs.TriggerE2E, "still fails after 2 fix attempts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := e2eVerdict(tt.errs, tt.limit, 0.8)
			if tt.trigger == "" {
				if got != nil {
					t.Fatalf("stopped: %+v", got)
				}
				return
			}
			if got == nil || got.Trigger != tt.trigger || !strings.Contains(got.Question, tt.question) ||
				got.Error != tt.errs[len(tt.errs)-1] || !strings.Contains(got.Question, "--- failure 1 of the last") {
				t.Fatalf("verdict %+v", got)
			}
		})
	}
}

// An outcome for a task whose attempt record was lost (its store holder killed before the record reached disk) is
// recorded on a record of its own.
func TestRecordAttemptWithoutARecord(t *testing.T) {
	task := &jobs.Task{ID: "1"}
	a := recordAttempt(&jobs.Run{ID: "r-1"}, task, &jobs.Change{}, &outcome{ran: true, duration: time.Second}, time.Now())
	if len(task.Attempts) != 1 || a != task.Attempts[0] || a.Duration != time.Second || task.Started != 1 {
		t.Fatalf("attempts %v, started %d", task.Attempts, task.Started)
	}
}
