package brain

import (
	"context"
	"strings"
	"testing"
)

func TestSubjectNamesWhatFailed(t *testing.T) {
	for _, c := range []struct {
		name, failure string
		kind          subjectKind
		want          []string
	}{
		{"libpq names host, address and port apart",
			`psql: error: connection to server at "billing-db.svc" (10.4.0.9), port 5432 failed: Connection refused`,
			subjHost, []string{"billing-db.svc", "billing-db.svc:5432", "10.4.0.9", "10.4.0.9:5432"}},
		{"go dials an address", "dial tcp 10.4.0.9:5432: connect: connection refused", subjHost, []string{"10.4.0.9", "10.4.0.9:5432"}},
		{"a local service counts by its port only", "Error: connect ECONNREFUSED 127.0.0.1:6380", subjHost, []string{"localhost:6380"}},
		{"an endpoint that answered with an error status", "POST https://hooks.vendor.io/v2/events?x=1 -> 503 Service Unavailable",
			subjURL, []string{"hooks.vendor.io/v2/events?x=1"}},
		{"a package path is not a host", "panic: test timed out after 1m0s\ngithub.com/acme/x.TestY(0xc0001)", subjHost, nil},
		{"java packages are not hosts", "java.net.ConnectException: Connection refused\n\tat java.io.FilterInputStream.read(FilterInputStream.java:83)", subjHost, nil},
		{"webpack", "Module not found: Error: Can't resolve 'left-pad' in '/src'", subjModule, []string{"left-pad"}},
		{"esbuild", `✘ [ERROR] Could not resolve "left-pad"`, subjModule, []string{"left-pad"}},
		{"npm drops the version", "npm ERR! 404  '@scope/thing@^1.2.0' is not in this registry.", subjModule, []string{"@scope/thing"}},
		{"pip drops the pin", "ERROR: No matching distribution found for tomli==9.1", subjModule, []string{"tomli"}},
		{"go module with its version", "go: example.org/lib/v2@v2.0.3: invalid version: unknown revision v2.0.3", subjModule, []string{"example.org/lib/v2"}},
		{"a missing file", "FileNotFoundError: [Errno 2] No such file or directory: 'data/seed/users.json'", subjFile, []string{"seed/users.json"}},
		{"a test named in prose", "test_totals_round fails: 10.04 != 10.05", subjTest, []string{"test_totals_round"}},
		{"a passing test named in prose is not failing", "TestA passes now but TestB fails: nil map", subjTest, []string{"TestB"}},
		{"eslint rule and file", "src/a.ts\n  4:1  error  'x' is defined but never used  no-unused-vars", subjRule, []string{"no-unused-vars"}},
		{"go vet analyzer", "pkg/q.go:9:2: copylocks: call of f copies lock value", subjRule, []string{"copylocks"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := subjectOf(c.failure)[c.kind]
			if len(got) != len(c.want) {
				t.Fatalf("%s = %v, want %v", c.kind, got, c.want)
			}
			for _, w := range c.want {
				if !got[w] {
					t.Errorf("%s = %v, want %q among them", c.kind, got, w)
				}
			}
		})
	}
}

func TestOneSubjectAcrossToolsIsOneFailure(t *testing.T) {
	for _, c := range []struct{ name, a, b string }{
		{"a database by psql and by prisma",
			`psql: error: connection to server at "billing-db.svc" (10.4.0.9), port 5432 failed: Connection refused`,
			"Error: P1001: Can't reach database server at `billing-db.svc`:`5432`"},
		{"a local server down, dialled and then fetched",
			"dial tcp 127.0.0.1:8081: connect: connection refused",
			`Get "http://localhost:8081/healthz": dial tcp [::1]:8081: connect: connection refused`},
		{"a package by webpack and by vite",
			"Module not found: Error: Can't resolve 'chart-kit' in '/app/src'",
			`[vite]: Rollup failed to resolve import "chart-kit" from "src/Chart.tsx".`},
		{"a host curl and node cannot resolve",
			"curl: (6) Could not resolve host: api.partner.net",
			"Error: getaddrinfo ENOTFOUND api.partner.net"},
		{"the same failure with a note added",
			"redis.exceptions.ConnectionError: Error 111 connecting to kv.svc:6379. Connection refused.",
			"redis.exceptions.ConnectionError: Error 111 connecting to kv.svc:6379. Connection refused. (after raising the pool size)"},
		{"a test told in the agent's words",
			"test_invoice_pdf_layout fails: page count 3, expected 2",
			"The invoice PDF layout test is still failing: one page too many."},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := ErrorSimilarity(c.a, c.b); s < defaultSimilarityThreshold {
				t.Errorf("ErrorSimilarity = %.2f, want the same failure (≥ %.2f)", s, defaultSimilarityThreshold)
			}
		})
	}
}

func TestDifferentSubjectsAreDifferentFailures(t *testing.T) {
	for _, c := range []struct{ name, a, b string }{
		{"one rule in two files",
			"src/a.tsx\n  12:5  warning  React Hook useMemo has a missing dependency: 'x'  react-hooks/exhaustive-deps",
			"src/b.tsx\n  12:5  warning  React Hook useMemo has a missing dependency: 'y'  react-hooks/exhaustive-deps"},
		{"two hosts refusing",
			"dial tcp 10.1.0.5:5432: connect: connection refused",
			"dial tcp 10.1.0.8:6379: connect: connection refused"},
		{"two missing modules",
			"ModuleNotFoundError: No module named 'yaml'",
			"ModuleNotFoundError: No module named 'toml'"},
		{"two pages of one local server",
			"page.goto: Timeout 30000ms exceeded.\n  - navigating to \"http://localhost:3000/login\", waiting until \"load\"",
			"page.goto: Timeout 30000ms exceeded.\n  - navigating to \"http://localhost:3000/settings\", waiting until \"load\""},
		{"two undefined names in one file",
			"./cmd/main.go:10:2: undefined: config.Load",
			"./cmd/main.go:10:2: undefined: config.Parse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := ErrorSimilarity(c.a, c.b); s >= defaultSimilarityThreshold {
				t.Errorf("ErrorSimilarity = %.2f, want different failures (< %.2f)", s, defaultSimilarityThreshold)
			}
		})
	}
}

func decideFor(t *testing.T, history ...string) Decision {
	t.Helper()
	d, err := (&Heuristic{}).Decide(context.Background(), DecideInput{TaskID: "1", TaskTitle: "t", AttemptHistory: history})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecideReadsLoopsByMeaning(t *testing.T) {
	for _, c := range []struct {
		name    string
		history []string
		verdict Verdict
		says    string // in the reason
	}{
		{"one database, three clients", []string{
			`psql: error: connection to server at "ledger-db.svc" (10.9.8.7), port 5432 failed: Connection refused`,
			"dial tcp 10.9.8.7:5432: connect: connection refused",
			"Error: P1001: Can't reach database server at `ledger-db.svc`:`5432`",
		}, Escalate, "same thing (ledger-db.svc:5432)"},
		{"three identical failures, one with a note, are a loop, not an oscillation", []string{
			"Could not connect to Redis at kv.svc:6379: Connection refused",
			"Could not connect to Redis at kv.svc:6379: Connection refused",
			"Could not connect to Redis at kv.svc:6379: Connection refused (tried a longer timeout)",
		}, Escalate, "in a row"},
		{"the agent says it is the same failure", []string{
			"--- FAIL: TestSync (30.00s)\n    sync_test.go:88: timed out waiting for ack",
			"The sync test hangs again, same hang after adding a buffered channel.",
			"Same hang: TestSync still times out waiting for the ack.",
		}, Escalate, "in a row"},
		{"one database through a JDBC driver and a migration tool", []string{
			"java.net.ConnectException: Connection refused\n  connecting to jdbc:postgresql://pg.prod.internal:5432/app",
			"org.postgresql.util.PSQLException: Connection to pg.prod.internal:5432 refused.",
			"Flyway: Unable to obtain connection from database (jdbc:postgresql://pg.prod.internal:5432/app): Connection to pg.prod.internal:5432 refused.",
		}, Escalate, "in a row"},
		{"the agent's word that it is still blocked", []string{
			"Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress",
			"Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress",
			"helm upgrade still blocked: another operation (install/upgrade/rollback) is in progress",
		}, Escalate, "in a row"},
		{"still failing, but another test now: progress", []string{
			"--- FAIL: TestA (0.00s)\n    a_test.go:3: got 1, want 2",
			"Still failing, another test now:\n--- FAIL: TestB (0.00s)\n    b_test.go:9: got 5, want 6",
		}, Retry, "changed"},
		{"the same failure around the agent's word for it is a loop, not an oscillation", []string{
			"Error: Cannot find module 'sharp'\nRequire stack:\n- /app/src/img.js",
			"The image step failed again, same error as before.",
			"Error: Cannot find module 'sharp'\nRequire stack:\n- /app/src/thumbs.js",
		}, Escalate, "in a row"},
		{"a test fixed earlier comes back", []string{
			"--- FAIL: TestParse/empty (0.00s)\n    parse_test.go:12: got nil, want error",
			"--- FAIL: TestParse/unicode (0.00s)\n    parse_test.go:30: rune count 4, want 3",
			"--- FAIL: TestLoad (0.00s)\n    load_test.go:9: stale entry",
			"--- FAIL: TestParse/empty (0.00s)\n    panic: index out of range [0] with length 0",
		}, Escalate, "back at attempt 4"},
		{"different hosts one after another: progress", []string{
			"dial tcp 10.1.0.5:5432: connect: connection refused",
			"dial tcp 10.1.0.8:6379: connect: connection refused",
			"dial tcp 10.1.0.9:9092: connect: connection refused",
		}, Retry, "changed"},
		{"fewer failing tests: progress", []string{
			"FAILED t.py::test_a - KeyError: 'id'\nFAILED t.py::test_b - KeyError: 'id'\nFAILED t.py::test_c - KeyError: 'id'",
			"FAILED t.py::test_a - KeyError: 'id'\nFAILED t.py::test_b - KeyError: 'id'",
			"FAILED t.py::test_a - KeyError: 'id'",
		}, Retry, ""},
		{"one test failing a different way each time: progress", []string{
			"FAILED t.py::test_export - KeyError: 'rows'",
			"FAILED t.py::test_export - TypeError: 'NoneType' object is not iterable",
			"FAILED t.py::test_export - AssertionError: assert 3 == 4",
		}, Retry, ""},
		{"one lint rule in three files: new findings", []string{
			"src/a.tsx\n  3:9  warning  React Hook useEffect has a missing dependency: 'a'  react-hooks/exhaustive-deps",
			"src/b.tsx\n  8:2  error  'b' is assigned a value but never used  no-unused-vars",
			"src/c.tsx\n  5:1  warning  React Hook useEffect has a missing dependency: 'c'  react-hooks/exhaustive-deps",
		}, Retry, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decideFor(t, c.history...)
			if d.Decision != c.verdict || !strings.Contains(d.Reason, c.says) {
				t.Errorf("got %s (%q), want %s saying %q", d.Decision, d.Reason, c.verdict, c.says)
			}
			if strings.Contains(c.name, "not an oscillation") && strings.Contains(d.Reason, "oscillate") {
				t.Errorf("reason %q calls the same failure an oscillation", d.Reason)
			}
		})
	}
}

func TestDecideNamesPermanentFailuresByKind(t *testing.T) {
	for _, c := range []struct {
		name, failure string
		says          string // in the reason
		not           string // never in the reason
	}{
		{"aws iam", "An error occurred (AccessDenied) when calling the DeleteObject operation: User: arn:aws:iam::1:user/bot is not authorized to perform: s3:DeleteObject", "authorization", ""},
		{"azure rbac", "(AuthorizationFailed) The client 'x' does not have authorization to perform action 'Microsoft.Web/sites/write'", "authorization", ""},
		{"a missing repository", "remote: Repository not found.\nfatal: repository 'https://github.com/acme/nope.git/' not found", "does not exist", ""},
		{"a secret scanner", "remote: - GITHUB PUSH PROTECTION\nremote:     - Push cannot contain secrets\n ! [remote rejected] main -> main (push declined due to repository rule violations)", "secret scanner", ""},
		{"a policy", "admission webhook \"policy.kyverno.svc\" denied the request: resource violated the organization policy require-labels", "policy", ""},
		{"gcloud quotes the permission", `denied: Permission "artifactregistry.repositories.uploadArtifacts" denied on resource "projects/acme/locations/us/repositories/images" (or it may not exist).`, "authorization", ""},
		{"branch protection", "remote: error: GH006: Protected branch update failed for refs/heads/main.", "policy", ""},
		{"signing", "error: No profiles for 'org.acme.notes' were found: Xcode couldn't find any iOS App Development provisioning profiles matching 'org.acme.notes'.", "signing", ""},
		{"a lock held by someone else", "Error: Error acquiring the state lock\nLock Info:\n  ID:   1f2e\n  Who:  sam@laptop-2\n  Created: 2026-10-01 08:00:00 +0000 UTC", "lock", ""},
		{"credit used up is billing, not credentials", `{"error":{"type":"insufficient_quota","message":"You exceeded your current quota, please check your plan and billing details."}}`, "billing", "credentials"},
		{"a usage limit with a date", "You have reached your monthly usage limit. Access will be restored on 2027-01-01.", "usage limit", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decideFor(t, c.failure)
			if d.Decision != Escalate || !d.Permanent || !strings.Contains(d.Reason, c.says) || c.not != "" && strings.Contains(d.Reason, c.not) {
				t.Errorf("got %s permanent=%v (%q), want a permanent escalation saying %q", d.Decision, d.Permanent, d.Reason, c.says)
			}
			if d.GuidanceForRetry != "" {
				t.Errorf("an escalation carries guidance %q", d.GuidanceForRetry)
			}
		})
	}
}

// What reads like those kinds but is transient, or a bug in the code under test, still gets another attempt.
func TestDecideRetriesLookalikes(t *testing.T) {
	for _, c := range []struct{ name, failure string }{
		{"AccessDenied expected by a test", "--- FAIL: TestGuard (0.00s)\n    guard_test.go:20: err = <nil>, want AccessDenied"},
		{"a rate limit answered with 403", "HTTP 403: You have exceeded a secondary rate limit. Please wait a few minutes. retry-after: 60"},
		{"a package manager's lock held by a local process", "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 (apt-get)"},
		{"a deadlock", "ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"},
		{"a test about secrets", "FAILED tests/test_mask.py::test_masks_secret_token - AssertionError: assert 'tok_****' == 'tok_********'"},
		{"a first network timeout", "Get \"https://proxy.golang.org/x/@v/list\": dial tcp 142.250.1.1:443: i/o timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := decideFor(t, c.failure); d.Decision != Retry {
				t.Errorf("got %s (%q), want retry", d.Decision, d.Reason)
			}
		})
	}
}

// Guidance never steers an agent around a safeguard: not past a scanner, not through history.
func TestRetryGuidanceNeverBypassesSafeguards(t *testing.T) {
	for _, h := range [][]string{
		{"FAILED tests/test_mask.py::test_masks_secret_token - AssertionError"},
		{"remote: error: GH013: Repository rule violations found for refs/heads/x."},
		{"git push: ! [rejected] main -> main (non-fast-forward)"},
	} {
		d := decideFor(t, h...)
		g := strings.ToLower(d.GuidanceForRetry)
		for _, bad := range []string{"force", "rewrite", "rebase", "filter-branch", "--no-verify", "bypass", "amend"} {
			if strings.Contains(g, bad) {
				t.Errorf("guidance for %q says %q: %q", h[0], bad, d.GuidanceForRetry)
			}
		}
	}
}
