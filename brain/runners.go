package brain

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// runners.go reads test runners' result lines by each runner's own format. A summary line says pass or fail by
// its counts, whatever words it holds: "100% tests passed, 0 tests failed out of 4" (CTest) is a pass, "Passed!
// - Failed: 0, Passed: 57" (.NET) too, and "1 failed" under a list of passes (Playwright) is a failure. A line
// that reports one test by name says that test passed or failed, and the words of its name ("fails_on_null",
// "error_is_raised") are not failures.

// verdict is what a runner's line says of the run (a summary) or of one test.
type verdict int

const (
	verdictNone verdict = iota
	verdictPass
	verdictFail
)

var (
	// logLevelRe is the level tag build tools put before each line ("[INFO] ", "[ERROR] "), and the status glyph
	// some runners put before a summary ("✔ Test run with …"): neither is part of the format.
	logLevelRe = lazyRE(`^\s*(?:\[(?:INFO|ERROR|WARN(?:ING)?|DEBUG)\]\s*)?(?:[✔✘✓✗✕✖×◇]\s*)?`)

	// runnerSummaryRes are the summary lines of the runners, after logLevelRe; their counts say the verdict.
	runnerSummaryRes = []*pattern{
		// pytest: "==== 1 failed, 41 passed, 2 skipped in 1.52s ====", and with -q "27 passed in 0.61s".
		lazyRE(`^=*\s*\d+ (?:failed|passed|skipped|deselected|xfailed|xpassed|errors?|warnings?|rerun)\b[^=\n]*\bin [\d.]+s\b(?:\s*\([^)]*\))?\s*=*$`),
		// unittest: "OK", "OK (skipped=2)", "FAILED (failures=1, errors=1)".
		lazyRE(`^(?:OK|FAILED)(?: \((?:\w+=\d+(?:, )?)+\))?$`),
		// cargo test: "test result: ok. 6 passed; 0 failed; 0 ignored; …".
		lazyRE(`^test result: (?:ok|FAILED)\. \d+ passed; \d+ failed`),
		// cargo-nextest: "Summary [   0.118s] 23 tests run: 23 passed, 0 skipped".
		lazyRE(`^Summary \[\s*[\d.]+m?s\] \d+ tests? run: `),
		// jest: "Tests:       1 failed, 97 passed, 98 total", "Test Suites: 2 passed, 2 total", and the snapshots' line
		// of the same summary, "Snapshots:   4 passed, 4 total", which under a failed test says nothing of it.
		lazyRE(`^(?:Tests|Test Suites|Snapshots):\s+(?:\d+ [a-z]+, )*\d+ total$`),
		// vitest: "Test Files  1 failed | 11 passed (12)", "Tests  8 passed (8)".
		lazyRE(`^(?:Test Files|Tests)\s+\d+ [a-z]+(?: \| \d+ [a-z]+)* \(\d+\)$`),
		// mocha ("42 passing (380ms)", "2 failing"), Playwright ("9 passed (7.4s)", "45 passed (1.4m)", "1 failed", "1
		// flaky"), bun (" 41
		// pass", " 1 fail"): one count a line.
		lazyRE(`^\d+ (?:passing|failing|passed|failed|flaky|pass|fail)(?: \([\d.]+\s*(?:ms|s|m|h)(?: [\d.]+\s*(?:ms|s|m))?\))?$`),
		// RSpec and Hspec: "3 examples, 0 failures, 2 pending".
		lazyRE(`^\d+ examples?, \d+ failures?(?:, \d+ pending)?(?:, \d+ errors? occurred outside of examples)?$`),
		// minitest: "18 runs, 42 assertions, 0 failures, 0 errors, 0 skips".
		lazyRE(`^\d+ runs, \d+ assertions, \d+ failures, \d+ errors, \d+ skips$`),
		// ExUnit: "3 doctests, 38 tests, 0 failures", "… 1 failure, 2 excluded", "… (1 excluded)".
		lazyRE(`^(?:\d+ doctests?, )?(?:\d+ propert(?:y|ies), )?\d+ tests?, \d+ failures?(?:, \d+ (?:excluded|skipped|invalid))*(?: \(\d+ excluded\))?\.?$`),
		// PHPUnit: "OK (26 tests, 61 assertions)", "Tests: 10, Assertions: 14, Failures: 1.", "FAILURES!", "ERRORS!".
		lazyRE(`^OK \(\d+ tests?, \d+ assertions?\)$|^Tests: \d+, Assertions: \d+(?:, [A-Z][a-z]+: \d+)*\.$|^(?:FAILURES|ERRORS)!$`),
		// .NET: "Passed!  - Failed:     0, Passed:    57, …" (vstest), "Test summary: total: 64, failed: 0, …" (the
		// .NET 9 terminal logger), "Test Run Successful." / "Test Run Failed.".
		lazyRE(`^(?:Passed|Failed)!\s+-\s+Failed:\s+\d+, Passed:\s+\d+|^Test summary: total: \d+, failed: \d+|^Test Run (?:Successful|Failed)\.$`),
		// Gradle: "14 tests completed, 1 failed"; Maven Surefire: "Tests run: 19, Failures: 1, Errors: 0, Skipped: 0";
		// both: "BUILD SUCCESSFUL in 14s", "BUILD FAILURE".
		lazyRE(`^\d+ tests? completed, \d+ failed(?:, \d+ skipped)?$|^Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+|^BUILD (?:SUCCESS|SUCCESSFUL|FAILED|FAILURE)\b`),
		// CTest: "100% tests passed, 0 tests failed out of 4".
		lazyRE(`^\d+% tests passed, \d+ tests? failed out of \d+`),
		// XCTest: "Executed 9 tests, with 1 failure (0 unexpected) in …", "Test Suite 'All tests' passed at …";
		// swift-testing: "Test run with 12 tests passed after 0.015 seconds.".
		lazyRE(`^Executed \d+ tests?, with \d+ failures?|^Test Suite '.+' (?:passed|failed) at |^Test run with \d+ tests? (?:passed|failed) after`),
		// Dart: "00:01 +24: All tests passed!", "00:01 +22 -2: Some tests failed.".
		lazyRE(`^\d+:\d+ \+\d+(?: ~\d+)?(?: -\d+)?: (?:All tests passed!|Some tests failed\.)$`),
		// Deno: "ok | 12 passed | 0 failed (120ms)", "FAILED | 11 passed | 1 failed (130ms)".
		lazyRE(`^(?:ok|FAILED) \| \d+ passed(?: \(\d+ steps?\))? \| \d+ failed`),
		// GoogleTest: "[  PASSED  ] 42 tests.", "[  FAILED  ] 2 tests, listed below:"; Catch2: "All tests passed (42
		// assertions in 7 test cases)", "test cases: 7 | 6 passed | 1 failed"; Zig: "All 12 tests passed.".
		lazyRE(`^\[\s+(?:PASSED|FAILED)\s+\] \d+ tests?|^All tests passed \(\d+ assertions? in \d+ test cases?\)$|^test cases:\s+\d+ \| \d+ passed \| \d+ failed|^All \d+ tests passed\.$`),
		// ESLint's stylish formatter: "✖ 5 problems (3 errors, 2 warnings)" (it prints nothing when clean), and with
		// --max-warnings "ESLint found too many warnings (maximum: 0).", which fails the run whatever the errors.
		lazyRE(`^\d+ problems? \(\d+ errors?, \d+ warnings?\)$|^ESLint found too many warnings \(maximum: \d+\)\.$`),
		// dbt's last line of a run or build, behind its clock: "10:14:40  Done. PASS=136 WARN=1 ERROR=0 SKIP=0 TOTAL=137"
		// (newer versions add counts such as NO-OP=0 before TOTAL).
		lazyRE(`^(?:\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+)?Done\. PASS=\d+(?: [A-Z-]+=\d+)* TOTAL=\d+$`),
		// testthat: "[ FAIL 0 | WARN 0 | SKIP 1 | PASS 42 ]"; gotestsum: "DONE 42 tests, 2 failures in 1.3s".
		lazyRE(`^\[ FAIL \d+ \| WARN \d+ \| SKIP \d+ \| PASS \d+ \]$|^DONE \d+ tests?(?:, \d+ failures?)?(?:, \d+ errors?)? in [\d.]+m?s$`),
	}
	runnerSummaryGs = guardAll(runnerSummaryRes)

	// Counts in a summary, count first ("2 failed", "0 tests failed", "1 failure") or key first ("Failures: 1",
	// "failed: 0", "failures=1", "FAIL 0").
	countFirstRe = lazyRE(`(?i)\b(\d+)\s+(?:tests?\s+)?(failed|failures?|failing|fail|errors?|passed|passing|pass|succeeded)\b`)
	keyFirstRe   = lazyRE(`(?i)\b(failed|failures?|errors?|fail|passed|succeeded|pass)\s*[:=]?\s*(\d+)\b`)
	// Summary words that say failure whatever the counts: a runner that failed for a reason it does not count
	// (a crash, a build error).
	failWordSummaryRe = lazyRE(`^(?:FAILED\b|FAILURES!|ERRORS!|Failed!|BUILD FAIL|Test Run Failed|test result: FAILED|ESLint found too many warnings)|\bfailed at |\btests failed\.|\btests? failed after\b|^\[\s+FAILED`)
	// A run of nothing: no test ran, so the summary proves nothing.
	emptyRunRe = lazyRE(`\b(?:0 (?:tests?|examples?|runs|total)\b|total: 0\b|Executed 0 tests|Tests run: 0,)`)

	// Lines that report one test passing, by runner: libtest "test a::b ... ok", Deno "name ... ok (2ms)", pytest -v
	// "tests/t.py::test_x PASSED [ 10%]", Gradle "Test > name() PASSED", XCTest "Test Case '-[…]' passed (0.001
	// seconds).", go "--- PASS: TestX", .NET "Passed Name [1 ms]", nextest "PASS [   0.004s] crate name", CTest
	// "1/4 Test  #1: name ....   Passed", TAP "ok 1 - name", and the check marks of jest, vitest, mocha,
	// Playwright, bun and node's runner.
	testPassLineRe = lazyRE(`^(?:test \S+ \.\.\. ok$|\S.* \.\.\. ok(?: \(\d+m?s\))?$|\S+::\S+ PASSED(?:\s+\[\s*\d+%\])?$|\S.* > .+ PASSED$|Test Case '.+' passed \(|--- PASS: |Passed \S+ \[|PASS \[\s*[\d.]+m?s\] |\d+/\d+ Test\s+#\d+: \S+ \.+\s+Passed\b|ok \d+ (?:- )?\S|[✓✔√]\s+\S)`)
	// Lines that report one test failing, the same runners' forms.
	testFailLineRe = lazyRE(`^(?:test \S+ \.\.\. FAILED$|\S.* \.\.\. FAILED(?: \(\d+m?s\))?$|\S+::\S+ FAILED|\S.* > .+ FAILED$|Test Case '.+' failed \(|--- FAIL: |Failed \S+ \[|FAIL \[\s*[\d.]+m?s\] |\d+/\d+ Test\s+#\d+: \S+ \.+\s*\*{3}(?:Failed|Exception)|not ok \d+ |[✕✗×✘]\s+\S)`)
)

// runnerLine is l without a build tool's level tag and the surrounding space.
func runnerLine(l string) string {
	// A box a CLI draws around a tool's output ("│ 14:02:34  Done. PASS=8 … │") frames the line on both sides.
	s := strings.TrimSpace(strings.TrimRight(undecorated(l), " \t│┃║"))
	if s != "" && (s[0] == '[' || s[0] >= utf8.RuneSelf) {
		s = strings.TrimSpace(logLevelRe.ReplaceAllString(s, ""))
	}
	return s
}

// summaryVerdict reads l as a test runner's summary line: pass when it counts no failure (and counts some run),
// fail when it counts one or says so, none when l is no runner's summary.
func summaryVerdict(l string) verdict {
	s := runnerLine(l)
	if s == "" {
		return verdictNone
	}
	if !matchAny(runnerSummaryGs, s, fold(l)) {
		// A summary the agent quotes after a colon: "`ctest --output-on-failure` reports: 100% tests passed, 0 tests
		// failed out of 37." Only one that opens with its count: a bare "OK" after a colon is a status of anything.
		i := strings.LastIndex(s, ": ")
		if i < 0 {
			return verdictNone
		}
		s = strings.TrimRight(strings.Trim(strings.TrimSpace(s[i+2:]), "`"), ".")
		if s == "" || s[0] < '0' || s[0] > '9' || !matchAny(runnerSummaryGs, s, fold(s)) {
			return verdictNone
		}
	}
	if failWordSummaryRe.MatchString(s) || failures(s) > 0 {
		return verdictFail
	}
	if emptyRunRe.MatchString(s) && !strings.Contains(s, "passed") || zeroPasses(s) {
		return verdictNone
	}
	return verdictPass
}

// failures sums the failure and error counts of a summary line.
func failures(s string) int {
	n := 0
	add := func(word, count string) {
		if c, err := strconv.Atoi(count); err == nil && failCountWord(word) {
			n += c
		}
	}
	for _, m := range countsFirst(s) {
		add(m[2], m[1])
	}
	for _, m := range keyFirstRe.FindAllStringSubmatch(s, -1) {
		add(m[1], m[2])
	}
	return n
}

// zeroPasses reports a summary that counts passes and none of them passed ("0 passed", "PASS 0"): nothing ran.
func zeroPasses(s string) bool {
	counted, passed := false, 0
	for _, m := range countsFirst(s) {
		if !failCountWord(m[2]) {
			c, _ := strconv.Atoi(m[1])
			counted, passed = true, passed+c
		}
	}
	for _, m := range keyFirstRe.FindAllStringSubmatch(s, -1) {
		if !failCountWord(m[1]) {
			c, _ := strconv.Atoi(m[2])
			counted, passed = true, passed+c
		}
	}
	return counted && passed == 0
}

// countsFirst are the count-first counts of a summary line ("2 failed"), without the value of a key that happens to
// stand before the next key's name: in "WARN=1 ERROR=0" the 1 is the warnings', not an error count.
func countsFirst(s string) [][]string {
	var out [][]string
	for _, loc := range countFirstRe.FindAllStringSubmatchIndex(s, -1) {
		if loc[0] > 0 && (s[loc[0]-1] == '=' || s[loc[0]-1] == ':') {
			continue
		}
		out = append(out, []string{s[loc[0]:loc[1]], s[loc[2]:loc[3]], s[loc[4]:loc[5]]})
	}
	return out
}

func failCountWord(w string) bool {
	w = strings.ToLower(w)
	return strings.HasPrefix(w, "fail") || strings.HasPrefix(w, "error")
}

// testVerdict reads l as a runner's report of one test: pass, fail, or none.
func testVerdict(l string) verdict {
	s := strings.TrimSpace(l)
	switch {
	case s == "":
		return verdictNone
	case testFailLineRe.MatchString(s):
		return verdictFail
	case testPassLineRe.MatchString(s):
		return verdictPass
	}
	return verdictNone
}

var (
	checkMarkRe = lazyRE(`^\s*[✓✔√]`)
	// runnerWordsG lets a line that none of the runners' lines can be skip them all.
	partOfG      = guard(partOfRe)
	runnerWordsG = guard(union(append(append([]*pattern{}, runnerSummaryRes...), testPassLineRe, testFailLineRe, imageBuildRe, infraApplyRe, migrationAppliedRe, ansibleRecapRe, toolVerdictRe, healthyRe, unhealthyRe)))
	// partOfRe counts passes out of a total in the agent's words ("12 of 13 specs pass"). It is checked on its own,
	// not in runnerWordsG: its words ("test", "spec") are in most lines of a log, and would let every runner pattern
	// run on them.
	partOfRe = lazyRE(`(?i)\b(\d+) (?:of|out of) (\d+) (?:tests?|specs?|checks?|cases?|examples?|scenarios?|suites?) (?:now )?(?:pass|passed|passing|succeed|succeeded|are green)\b`)
	// toolVerdictRe is a tool's own verdict line, the failing word in a group: Helm's release status after an
	// install or upgrade ("STATUS: deployed", "STATUS: failed"), prove's "Result: PASS", Ginkgo's "FAIL! -- 12 Passed |
	// 1 Failed | …", Chef's "Chef Infra Client failed.", a CloudFormation status (a rollback or a *_FAILED fails), and
	// Airflow's end of a DAG run ("DagRun Finished: dag_id=…, state=success, …").
	toolVerdictRe = lazyRE(`^(?:.*\bDagRun Finished: .*\bstate=(?:success|(failed))\b.*|STATUS: (?:deployed|(failed))|Result: (?:PASS|(FAIL))|(?:SUCCESS|(FAIL))! -- \d+ Passed \| \d+ Failed \| \d+ Pending \| \d+ Skipped|(?:Chef (?:Infra )?Client|chef-client) (failed)\b.*|(?:\S+\s+)?(?:CREATE|UPDATE|DELETE|IMPORT)_(?:COMPLETE|(ROLLBACK_COMPLETE|ROLLBACK_FAILED|FAILED))\b.*)$`)
	// An image build's last line: BuildKit's "[+] Building 41.2s (12/12) FINISHED" (every step done: a pass; a
	// step short, the build stopped), its plain progress naming or writing the image ("#14 naming to
	// docker.io/library/app:1.2 done", "#14 writing image sha256:9b1f… done", "=> => naming to …" on a terminal),
	// which it does only once every step passed, and the classic builder's "Successfully built 3f1c2a9b7d4e".
	imageBuildRe = lazyRE(`^\[\+\] Building [\d.]+s \((\d+)/(\d+)\) FINISHED|^Successfully built [0-9a-f]{6,}$|^(?:#\d+|=> =>) (?:naming to \S+|writing image sha256:[0-9a-f]{12,})(?: done| +[\d.]+s)?$`)
	// Ansible's PLAY RECAP, a line per host: "web-01 : ok=14 changed=3 unreachable=0 failed=0 skipped=2 …". A host
	// with a failed or unreachable task fails the play; a task whose failure was ignored ("...ignoring") counts as
	// ignored, not failed.
	ansibleRecapRe = lazyRE(`^\S+\s*:\s*ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)\b`)
	// A database migration tool's line for a migration it applied: Django's "  Applying orders.0042_split… OK",
	// Rails' and Sequelize's "== 20240611093012 AddIndexOnEvents: migrated (0.0123s) ====", Alembic's "Running upgrade
	// 3c1d7e0a9f12 -> 9ab24c6d0e55, …" (it logs each upgrade as it runs it, and a failure's traceback after it).
	migrationAppliedRe = lazyRE(`^Applying [\w.-]+\.\w+\.\.\. OK$|^==\s+\S+\s+.*\bmigrated \([\d.]+m?s\)|^INFO\s+\[alembic\.runtime\.migration\] Running upgrade \S+ -> \S+`)
	// migrationWords are the fixed words of migrationAppliedRe's lines.
	migrationWords = []string{"... OK", "migrated (", "Running upgrade"}
	// Terraform's and OpenTofu's last line of an apply or a destroy that ran to the end: "Apply complete! Resources:
	// 3 added, 1 changed, 0 destroyed." Its failures end in "Error: …" lines instead.
	infraApplyRe = lazyRE(`^(?:Apply|Destroy) complete! Resources: \d+ (?:added|destroyed)`)
	// A health check's answer: a health endpoint's JSON status (Spring's "UP", the common "ok"/"healthy"), a
	// container's "(healthy)" in docker ps, gRPC health's "SERVING".
	healthyRe   = lazyRE(`(?i)^\{?.*"status"\s*:\s*"(?:ok|healthy|up|pass|green)"|\(healthy\)|^status:\s*SERVING$`)
	unhealthyRe = lazyRE(`(?i)^\{?.*"status"\s*:\s*"(?:down|unhealthy|fail|error|red)"|\(unhealthy\)|^status:\s*NOT_SERVING$`)
)

// runnerVerdict reads l as the result of a run: a test runner's summary, one test's result, an image build's end
// or a health check's answer. side says the line proves a build, not behaviour.
func runnerVerdict(l, low string) (v verdict, side bool) {
	// "12 of 13 specs pass": a count of passes out of a total passes only when it is all.
	if strings.Contains(low, " of ") && partOfG.may(low) {
		if m := partOfRe.FindStringSubmatch(l); m != nil {
			if m[1] != m[2] {
				return verdictFail, false
			}
			return verdictPass, false
		}
	}
	if !runnerWordsG.may(low) {
		return verdictNone, false
	}
	if v := summaryVerdict(l); v != verdictNone {
		return v, strings.HasPrefix(runnerLine(l), "BUILD ")
	}
	if v := testVerdict(l); v != verdictNone {
		// A check mark alone is any step's (a bundler's "✓ built in 3.21s" too): it proves no behaviour.
		return v, v == verdictPass && checkMarkRe.MatchString(l)
	}
	s := strings.TrimSpace(l)
	if m := imageBuildRe.FindStringSubmatch(s); m != nil {
		if m[1] != m[2] {
			return verdictFail, true
		}
		return verdictPass, true
	}
	// The tools' own last lines, each looked for only where its fixed words are (most lines are none of them).
	if strings.Contains(s, "unreachable=") {
		if m := ansibleRecapRe.FindStringSubmatch(s); m != nil {
			if m[1] != "0" || m[2] != "0" {
				return verdictFail, false
			}
			return verdictPass, false
		}
	}
	if m := toolVerdictRe.FindStringSubmatch(s); m != nil {
		if strings.Join(m[1:], "") != "" {
			return verdictFail, false
		}
		return verdictPass, false
	}
	if strings.Contains(s, " complete! Resources:") && infraApplyRe.MatchString(s) ||
		containsAny(s, migrationWords) && migrationAppliedRe.MatchString(s) {
		return verdictPass, false
	}
	switch {
	case unhealthyRe.MatchString(s):
		return verdictFail, false
	case healthyRe.MatchString(s):
		return verdictPass, false
	}
	return verdictNone, false
}
