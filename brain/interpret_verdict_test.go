package brain

import "testing"

// The verdict on outputs whose questions are not for a person: a question the agent raised and settled itself, an
// offer to try failed work again, and the agent's own word that the task is not done.
func TestVerdictSettledAndRetryQuestions(t *testing.T) {
	tests := []struct {
		name, output string
		want         Status
	}{
		{"a question the agent says it checked, answered by the docs",
			"Added the `--dry-run` flag to the importer.\n\n" +
				"A point I verified first: should a dry run still open the database connection? The importer spec says it must, to validate the schema, so it does.\n\n" +
				"All 31 tests passed.",
			StatusCompleted},
		{"a question the agent considered whether",
			"Switched the upload limit to 25 MB and updated the nginx config.\n\n" +
				"I also considered whether the limit should differ per plan? The billing doc fixes one limit for every plan, so I kept one.\n\n" +
				"go test ./... ok",
			StatusCompleted},
		{"a question after what the agent looked into, its paragraph ending there, still asks",
			"Added the `--dry-run` flag to the importer.\n\n" +
				"I looked into the audit log: should I make a dry run write to it too?\n\nAll 31 tests passed.",
			StatusNeedsHelp},
		{"a real question after finished work still asks",
			"Added the `--dry-run` flag to the importer. All 31 tests passed.\n\nShould a dry run also skip the audit log?",
			StatusNeedsHelp},
		{"an offer to re-run after the agent says the task is not done",
			"The e2e suite could not start: the Selenium grid at grid.internal:4444 refuses connections.\n\n" +
				"Unit tests: 88 passed. The task needs the e2e run, so it isn't complete. Should I re-run it when the grid is back?",
			StatusFailed},
		{"how the code works is not the task's verdict",
			"Moved the price rounding into the cart service; all 64 tests pass. The rounding now happens once at checkout, " +
				"so it isn't done per line item any more.",
			StatusCompleted},
		{"an offer to try again after a failure",
			"The deploy to staging failed: the image push was rejected with 403 from the registry.\n\nWould you like me to try the push again after you rotate the token?",
			StatusFailed},
		{"a question beside the retry offer still asks",
			"The deploy to staging failed: the image push was rejected with 403 from the registry.\n\n" +
				"Should I try again later? And which registry should the staging images go to from now on?",
			StatusNeedsHelp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if in := interpret(tt.output); in.Status != tt.want {
				t.Errorf("status %s, want %s (question %q, error %q)", in.Status, tt.want, in.Question, in.Error)
			}
		})
	}
}

// A list of the cases a design handles tells what happens when something fails; a list of what failed is failure.
func TestVerdictCasesHandledList(t *testing.T) {
	tests := []struct {
		name, output string
		want         Status
	}{
		{"edge cases covered after a passing run",
			"pytest: 57 passed in 3.2s\n\nEdge cases covered:\n- Upstream returns 500: the fetch fails and is retried twice.\n- Payload too large: the upload fails with 413 and nothing is written.\n",
			StatusCompleted},
		{"an error handling heading after a passing run",
			"Implemented the webhook consumer; all 12 tests pass.\n\n## Error handling\n* Bad signature: the request fails with 401.\n* Timeout talking to the DB: the job fails and goes back on the queue.\n",
			StatusCompleted},
		{"a list of what failed after a pass is still failure",
			"The unit tests pass (40 passed).\n\nStill failing:\n- the e2e login test fails with a timeout\n- the build of the docs site fails\n",
			StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if in := interpret(tt.output); in.Status != tt.want {
				t.Errorf("status %s, want %s (error %q)", in.Status, tt.want, in.Error)
			}
		})
	}
}
