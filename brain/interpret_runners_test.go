package brain

import "testing"

func TestSummaryVerdict(t *testing.T) {
	tests := []struct {
		runner, line string
		want         verdict
	}{
		{"pytest", "============ 58 passed, 2 skipped in 3.41s ============", verdictPass},
		{"pytest", "==== 1 failed, 41 passed in 1.52s ====", verdictFail},
		{"pytest -q", "27 passed, 1 error in 0.61s", verdictFail},
		{"unittest", "OK (skipped=2)", verdictPass},
		{"unittest", "FAILED (failures=1, errors=1)", verdictFail},
		{"cargo", "test result: ok. 6 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.03s", verdictPass},
		{"cargo", "test result: FAILED. 5 passed; 1 failed; 0 ignored", verdictFail},
		{"nextest", "     Summary [   0.118s] 23 tests run: 23 passed, 0 skipped", verdictPass},
		{"nextest", "     Summary [   0.231s] 23 tests run: 21 passed, 2 failed, 0 skipped", verdictFail},
		{"jest", "Tests:       98 passed, 98 total", verdictPass},
		{"jest", "Test Suites: 1 failed, 11 passed, 12 total", verdictFail},
		{"vitest", "      Tests  8 passed (8)", verdictPass},
		{"vitest", " Test Files  1 failed | 11 passed (12)", verdictFail},
		{"mocha", "  42 passing (380ms)", verdictPass},
		{"mocha", "  2 failing", verdictFail},
		{"playwright", "  9 passed (7.4s)", verdictPass},
		{"playwright", "  1 failed", verdictFail},
		{"bun", " 0 fail", verdictPass},
		{"bun", " 1 fail", verdictFail},
		{"rspec", "120 examples, 0 failures, 2 pending", verdictPass},
		{"rspec", "3 examples, 1 failure", verdictFail},
		{"minitest", "18 runs, 42 assertions, 0 failures, 0 errors, 0 skips", verdictPass},
		{"minitest", "18 runs, 42 assertions, 0 failures, 1 errors, 0 skips", verdictFail},
		{"phpunit", "OK (26 tests, 61 assertions)", verdictPass},
		{"phpunit", "Tests: 10, Assertions: 14, Failures: 1.", verdictFail},
		{"phpunit", "FAILURES!", verdictFail},
		{".NET vstest", "Passed!  - Failed:     0, Passed:    57, Skipped:     0, Total:    57, Duration: 412 ms - Billing.Tests.dll (net8.0)", verdictPass},
		{".NET vstest", "Failed!  - Failed:     1, Passed:    56, Skipped:     0, Total:    57, Duration: 530 ms - Shop.Tests.dll (net8.0)", verdictFail},
		{".NET 9", "Test summary: total: 64, failed: 0, succeeded: 64, skipped: 0, duration: 1.4s", verdictPass},
		{".NET 9", "Test summary: total: 64, failed: 3, succeeded: 61, skipped: 0, duration: 1.4s", verdictFail},
		{"gradle", "14 tests completed, 1 failed", verdictFail},
		{"gradle", "BUILD SUCCESSFUL in 14s", verdictPass},
		{"maven", "[INFO] Tests run: 19, Failures: 0, Errors: 0, Skipped: 1", verdictPass},
		{"maven", "[ERROR] Tests run: 19, Failures: 0, Errors: 2, Skipped: 0", verdictFail},
		{"maven", "[INFO] BUILD FAILURE", verdictFail},
		{"ctest", "100% tests passed, 0 tests failed out of 4", verdictPass},
		{"ctest", "83% tests passed, 2 tests failed out of 12", verdictFail},
		{"xctest", "\t Executed 18 tests, with 0 failures (0 unexpected) in 0.045 (0.050) seconds", verdictPass},
		{"xctest", "Test Suite 'All tests' failed at 2024-05-02 10:20:11.010.", verdictFail},
		{"swift-testing", "✔ Test run with 12 tests passed after 0.015 seconds.", verdictPass},
		{"swift-testing", "✘ Test run with 12 tests failed after 0.020 seconds with 1 issue.", verdictFail},
		{"exunit", "3 doctests, 38 tests, 0 failures", verdictPass},
		{"exunit", "2 doctests, 24 tests, 1 failure", verdictFail},
		{"dart", "00:01 +24: All tests passed!", verdictPass},
		{"dart", "00:01 +22 -2: Some tests failed.", verdictFail},
		{"deno", "ok | 12 passed | 0 failed (120ms)", verdictPass},
		{"deno", "FAILED | 11 passed | 1 failed (140ms)", verdictFail},
		{"googletest", "[  PASSED  ] 42 tests.", verdictPass},
		{"googletest", "[  FAILED  ] 2 tests, listed below:", verdictFail},
		{"testthat", "[ FAIL 0 | WARN 0 | SKIP 1 | PASS 42 ]", verdictPass},
		{"testthat", "[ FAIL 2 | WARN 0 | SKIP 1 | PASS 40 ]", verdictFail},
		{"gotestsum", "DONE 42 tests, 2 failures in 1.3s", verdictFail},
		{"nothing ran", "0 examples, 0 failures", verdictNone},
		{"prose", "All 12 tests pass and the change is committed.", verdictNone},
		{"prose", "I fixed the 2 failed tests.", verdictNone},
	}
	for _, tt := range tests {
		t.Run(tt.runner+"/"+tt.line, func(t *testing.T) {
			if got := summaryVerdict(tt.line); got != tt.want {
				t.Errorf("summaryVerdict(%q) = %d, want %d", tt.line, got, tt.want)
			}
		})
	}
}

// TestTestVerdict: one test's result line says its own result; the words of its name do not.
func TestTestVerdict(t *testing.T) {
	tests := []struct {
		line string
		want verdict
	}{
		{"test balance::tests::handles_failure_gracefully ... ok", verdictPass},
		{"test journal::tests::empty_journal_is_error ... FAILED", verdictFail},
		{"tests/test_retry.py::test_fail_fast_on_timeout PASSED                [ 40%]", verdictPass},
		{"tests/test_retry.py::test_backoff FAILED", verdictFail},
		{"SlugifyTest > failsOnNullInput() PASSED", verdictPass},
		{"Test Case '-[DateRangeTests testOverlapFailsForDisjointRanges]' passed (0.001 seconds).", verdictPass},
		{"--- PASS: TestErrorOnEmptyInput (0.00s)", verdictPass},
		{"--- FAIL: TestRefill (0.00s)", verdictFail},
		{"  Passed Shop.Tests.ErrorMapping_returns_422 [3 ms]", verdictPass},
		{"  Failed Shop.Tests.Discount_applies [8 ms]", verdictFail},
		{"        PASS [   0.004s] fetcher retry::tests::fails_after_max_attempts", verdictPass},
		{"        FAIL [   0.004s] fetcher retry::tests::backoff_is_capped", verdictFail},
		{" 3/4 Test  #3: failover_retry ...................   Passed    0.32 sec", verdictPass},
		{"  ✓ shows an error for an expired card (12 ms)", verdictPass},
		{"  ✕ applies the discount (5 ms)", verdictFail},
		{"not ok 3 - rejects bad input", verdictFail},
		{"The error handling is done.", verdictNone},
	}
	for _, tt := range tests {
		if got := testVerdict(tt.line); got != tt.want {
			t.Errorf("testVerdict(%q) = %d, want %d", tt.line, got, tt.want)
		}
	}
}

func TestInterpretRunnerOutputs(t *testing.T) {
	tests := []struct {
		name, output string
		want         Status
	}{
		{"ctest all passed", "100% tests passed, 0 tests failed out of 4\n\nTotal Test time (real) =   0.51 sec", StatusCompleted},
		{".NET passed", "Passed!  - Failed:     0, Passed:    57, Skipped:     0, Total:    57, Duration: 412 ms - Billing.Tests.dll (net8.0)", StatusCompleted},
		{".NET failed", "Failed!  - Failed:     1, Passed:    56, Skipped:     0, Total:    57, Duration: 530 ms - Shop.Tests.dll (net8.0)", StatusFailed},
		{"failure words in test names", "test a::fails_on_bad_input ... ok\ntest a::error_is_reported ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored", StatusCompleted},
		{"a pass under a failure in the same summary", "  1 failed\n    [chromium] › a.spec.ts:3:5 › applies a discount\n  8 passed (12.3s)", StatusFailed},
		{"image build and health check", "[+] Building 41.2s (12/12) FINISHED\n$ curl -fsS localhost:8080/healthz\n{\"status\":\"ok\"}", StatusCompleted},
		{"image build a step short", "[+] Building 3.2s (7/9) FINISHED\nERROR: failed to solve: process \"/bin/sh -c go build\" did not complete successfully: exit code: 1", StatusFailed},
		{"a bundler's check mark does not undo a failing test", "Tests  1 failed | 187 passed (188)\n\n✓ built in 3.21s", StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := interpret(tt.output); got.Status != tt.want {
				t.Errorf("status %s, want %s (%+v)", got.Status, tt.want, got)
			}
		})
	}
}
