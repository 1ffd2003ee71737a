package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/forge/githubfake"
)

// gitT runs git as the user would, with an identity of the user's own (orch must not take it).
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=User", "GIT_AUTHOR_EMAIL=user@example.com",
		"GIT_COMMITTER_NAME=User", "GIT_COMMITTER_EMAIL=user@example.com", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_OPTIONAL_LOCKS=0") // looking changes nothing: git status does not refresh the index
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitWorkspace is a user's repository with a plan whose one task writes the same file in every run (its own run id),
// and work of the user's own in progress: a staged change, an unstaged one, an untracked file. origin is a bare
// repository.
func gitWorkspace(t *testing.T) (dir, origin string) {
	t.Helper()
	dir = t.TempDir()
	origin = filepath.Join(t.TempDir(), "origin.git")
	gitT(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "plan.md", "# Shared file\n\n## Task 1: Write the shared file\nWrite your run id into shared.txt.\n")
	writeFile(t, dir, "plan.sim.yaml", `tasks:
  "1":
    - output: "Wrote shared.txt. All tests pass."
      sh: 'echo "$ORCH_RUN_ID" > shared.txt; sleep 0.3'
`)
	writeFile(t, dir, "shared.txt", "base\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	gitT(t, t.TempDir(), "clone", "-q", "--bare", dir, origin)
	gitT(t, dir, "remote", "add", "origin", origin)
	writeFile(t, dir, "plan.md", "# Shared file\n\n## Task 1: Write the shared file\nWrite your run id into shared.txt.\n\n<!-- staged -->\n")
	gitT(t, dir, "add", "plan.md")
	writeFile(t, dir, "shared.txt", "the user's own edit\n")
	writeFile(t, dir, "notes.txt", "untracked\n")
	return dir, origin
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkoutState is everything a user sees of their checkout.
func checkoutState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"symbolic-ref", "HEAD"}, {"ls-files", "-s"},
		{"status", "--porcelain", "--untracked-files=all"}, {"diff"}, {"diff", "--cached"}} {
		b.WriteString(gitT(t, dir, args...) + "\n--\n")
	}
	for _, f := range []string{"shared.txt", "plan.md", "notes.txt"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		b.Write(data)
	}
	return b.String()
}

// Two runs started at the same moment in one repository: each works on its own branch, commits its task, pushes it
// and opens its draft pull request; the user's checkout, with its work in progress, is as it was.
func TestRunsAtOnceOwnTheirBranches(t *testing.T) {
	dir, origin := gitWorkspace(t)
	before := checkoutState(t, dir)
	gh := githubfake.New("ghp_test")
	defer gh.Close()
	gh.AddGitRepo("acme", "app", origin)
	env := []string{"ORCH_REDIS_URL=" + isolatedRedis(t), "ORCH_GIT_PUSH=origin", "ORCH_GITHUB_TOKEN=ghp_test",
		"ORCH_GITHUB_API_URL=" + gh.URL(), "ORCH_GITHUB_REPO=acme/app"}
	const n = 2
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i] = orchEnv(t, dir, env, strings.NewReader(""), "run", "--agent", "sim", "--json", "plan.md")
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range results {
		if r.code != 0 {
			t.Fatalf("a run did not complete: %s", r)
		}
		end := lastEvent(t, r.stdout, "run_completed")
		id := end["run_id"].(string)
		seen[id] = true
		branch := "orch/" + id
		if end["branch"] != branch || end["base"] != "main" || end["commits"] != 1.0 || end["files_changed"] != 1.0 ||
			end["insertions"] != 1.0 || end["deletions"] != 1.0 {
			t.Errorf("run_completed does not name the work: %v", end)
		}
		if got := gitT(t, dir, "show", branch+":shared.txt"); got != id {
			t.Errorf("branch %s holds %q, not its own run's work", branch, got)
		}
		if got := gitT(t, origin, "rev-parse", branch); got != gitT(t, dir, "rev-parse", branch) {
			t.Errorf("%s was not pushed: origin has %s", branch, got)
		}
		log := gitT(t, dir, "log", "-1", "--format=%an <%ae>%n%B", branch)
		for _, want := range []string{"orch <orch@localhost>", "Task 1: Write the shared file", "Orch-Run: " + id, "Orch-Task: 1"} {
			if !strings.Contains(log, want) {
				t.Errorf("the commit on %s lacks %q:\n%s", branch, want, log)
			}
		}
		if pushed, done := strings.Index(r.stdout, `"type":"branch_pushed"`), strings.Index(r.stdout, `"type":"run_completed"`); pushed < 0 || pushed > done {
			t.Errorf("the push is not told before the run's end:\n%s", r.stdout)
		}
		pr, _ := end["pull_request"].(string)
		if !strings.Contains(pr, "/acme/app/pull/") {
			t.Errorf("run_completed names no pull request: %v", end)
		}
	}
	if len(seen) != n {
		t.Fatalf("runs: %v", seen)
	}
	pulls := gh.Pulls("acme", "app")
	if len(pulls) != n {
		t.Fatalf("%d pull requests, want %d: %+v", len(pulls), n, pulls)
	}
	for _, p := range pulls {
		if !p.Draft || p.Base != "main" || !seen[strings.TrimPrefix(p.Head, "orch/")] || !strings.Contains(p.Body, "Write the shared file") {
			t.Errorf("pull request %+v", p)
		}
	}
	if after := checkoutState(t, dir); after != before {
		t.Fatalf("the user's checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if wts := gitT(t, dir, "worktree", "list"); strings.Contains(wts, "[orch/") { // spares are detached
		t.Fatalf("worktrees left behind:\n%s", wts)
	}
	// The status and the diff of a run say where its work is.
	for id := range seen {
		st := orchEnv(t, dir, env, nil, "status", id)
		must(t, st, 0, "branch:    orch/"+id, "1 commit, 1 file changed", "pushed to origin", "pull request http")
		d := orchEnv(t, dir, env, nil, "diff", id)
		must(t, d, 0, "+"+id, "-base")
	}
}

// lastEvent is the last JSON event of a kind in a --json transcript.
func lastEvent(t *testing.T, out, kind string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, line := range strings.Split(out, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["type"] == kind {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no %s event in:\n%s", kind, out)
	}
	return found
}

// A bad base and a base given for a plain directory are usage errors that leave nothing behind.
func TestABadBaseIsAUsageError(t *testing.T) {
	dir, _ := gitWorkspace(t)
	r := orchEnv(t, dir, nil, nil, "run", "--agent", "sim", "--base", "no-such-branch", "plan.md")
	must(t, r, 2, `"no-such-branch" names no commit`)
	plain := t.TempDir()
	writeFile(t, plain, "plan.md", "# P\n\n## Task 1: T\nDo it.\n")
	writeFile(t, plain, "plan.sim.yaml", "default:\n  - output: Done.\n")
	r = orchEnv(t, plain, nil, nil, "run", "--agent", "sim", "--base", "main", "plan.md")
	must(t, r, 2, "is not a git repository")
	if out := gitT(t, dir, "branch", "--list", "orch/*"); out != "" {
		t.Fatalf("a refused run left a branch: %s", out)
	}
}

// Two runs in one plain directory: the second waits for the first, says so, and then runs.
func TestRunsInAPlainDirectoryTakeTurns(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "plan.md", "# Slow\n\n## Task 1: Take a while\nDo it.\n")
	writeFile(t, dir, "plan.sim.yaml", `tasks:
  "1":
    - output: "Done. All tests pass."
      sh: 'echo "start $ORCH_RUN_ID" >> log.txt; sleep 2; echo "end $ORCH_RUN_ID" >> log.txt'
`)
	env := []string{"ORCH_REDIS_URL=" + isolatedRedis(t)}
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Go(func() { results[i] = orchEnv(t, dir, env, nil, "run", "--agent", "sim", "plan.md") })
	}
	wg.Wait()
	waited := 0
	for _, r := range results {
		must(t, r, 0, "COMPLETED")
		if strings.Contains(r.stdout, "Waiting for run") && strings.Contains(r.stdout, "not a git repository") {
			waited++
		}
	}
	if waited != 1 {
		t.Fatalf("%d runs said they waited, want 1:\n%s\n%s", waited, results[0], results[1])
	}
	data, err := os.ReadFile(filepath.Join(dir, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "start") || !strings.HasPrefix(lines[1], "end") ||
		strings.TrimPrefix(lines[0], "start") != strings.TrimPrefix(lines[1], "end") {
		t.Fatalf("the runs overlapped:\n%s", data)
	}
}

// Two workers that share nothing but Redis and the repository: the run clones it on the first, parks there, and is
// answered and finished by the second, which fetches the run's pushed branch and goes on from it.
func TestAClonedRunMovesToAnotherWorker(t *testing.T) {
	_, origin := gitWorkspace(t)
	plans := t.TempDir() // where the run is started from: neither worker's directory
	writeFile(t, plans, "plan.md", "# Two steps\n\n## Task 1: First\nWrite a.txt.\n\n## Task 2: Second\nWrite b.txt next to a.txt.\n")
	writeFile(t, plans, "plan.sim.yaml", `tasks:
  "1":
    - output: "Wrote a.txt. All tests pass."
      sh: 'echo one > a.txt'
  "2":
    - output: |
        QUESTION: Which name for the second file?
        OPTIONS:
        A) b.txt  B) c.txt
        RECOMMENDATION: A
    - output: "Wrote b.txt. All tests pass."
      sh: 'test -f a.txt && echo two > b.txt'
`)
	url := isolatedRedis(t)
	common := []string{"ORCH_REDIS_URL=" + url, "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=127.0.0.1:0"}
	hostA, hostB := t.TempDir(), t.TempDir()
	a, aOut := startOrch(t, hostA, append(common, "ORCH_WORKTREES="+filepath.Join(hostA, "trees")), "worker")
	r := orchEnv(t, plans, []string{"ORCH_REDIS_URL=" + url, "ORCH_BRAIN=heuristic"}, nil, "run", "--detach", "--agent", "sim",
		"--repo", origin, "plan.md")
	must(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	waitFor(t, func() bool {
		st := orchEnv(t, plans, []string{"ORCH_REDIS_URL=" + url}, nil, "status", id)
		return strings.Contains(st.stdout, ": parked")
	}, aOut)
	a.Process.Signal(os.Interrupt)
	a.Wait()
	if got := gitT(t, origin, "show", "orch/"+id+":a.txt"); got != "one" {
		t.Fatalf("task 1 was not pushed: %q", got)
	}
	_, bOut := startOrch(t, hostB, append(common, "ORCH_WORKTREES="+filepath.Join(hostB, "trees")), "worker")
	must(t, orchEnv(t, plans, []string{"ORCH_REDIS_URL=" + url}, nil, "escalation", "resolve", id, "--answer", "b.txt"), 0)
	waitFor(t, func() bool {
		st := orchEnv(t, plans, []string{"ORCH_REDIS_URL=" + url}, nil, "status", id)
		return strings.Contains(st.stdout, ": completed")
	}, bOut)
	if got := gitT(t, origin, "show", "orch/"+id+":b.txt"); got != "two" {
		t.Fatalf("task 2 did not build on task 1: %q", got)
	}
	if n := gitT(t, origin, "rev-list", "--count", "main..orch/"+id); n != "2" {
		t.Fatalf("%s commits on the branch, want 2", n)
	}
	// The worker gives the worktree back right after the run's end is saved.
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(hostB, "trees", "worktrees", id))
		return os.IsNotExist(err)
	}, bOut)
}

// waitFor polls cond for up to a minute; the process output goes into the failure.
func waitFor(t *testing.T, cond func() bool, out *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out:\n%s", out.String())
		}
	}
}

// Two runs started from Slack at the same moment in one repository: each ends with its own branch and commit, the
// final message in each thread names its branch, and the checkout orch serves is unchanged.
func TestSlackRunsAtOnceOwnTheirBranches(t *testing.T) {
	t.Parallel()
	dir, _ := gitWorkspace(t)
	before := checkoutState(t, dir)
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	s := startServeIn(t, dir, fake, "ORCH_REDIS_URL="+isolatedRedis(t), "ORCH_GIT_PUSH=", "ORCH_GITHUB_TOKEN=", "GITHUB_TOKEN=")
	var wg sync.WaitGroup
	for _, user := range []string{"U1ALICE", "U2BOB"} {
		wg.Go(func() {
			code, body := s.post("/slack/commands", fake.SlashCommand("run plan.md", user, "C0RUNS"), "application/x-www-form-urlencoded")
			if code != 200 || !strings.Contains(body, "Starting a run") {
				t.Errorf("slash command: %d %s", code, body)
			}
		})
	}
	wg.Wait()
	ids := regexp.MustCompile(`Run (r-[a-z2-7]{10}) completed`)
	msgs := s.waitFor("two final messages", func(m []slackfake.Message) bool {
		n := 0
		for _, msg := range m {
			if ids.MatchString(msg.Text) {
				n++
			}
		}
		return n == 2
	})
	for _, m := range msgs {
		id := ids.FindStringSubmatch(m.Text)
		if id == nil {
			continue
		}
		branch := "orch/" + id[1]
		if !strings.Contains(m.Text, "branch "+branch+", 1 commit") || !strings.Contains(string(m.Blocks), "1 file changed, +1") {
			t.Errorf("the final message does not name the branch %s: %s", branch, m.Blocks)
		}
		if got := gitT(t, dir, "show", branch+":shared.txt"); got != id[1] {
			t.Errorf("branch %s holds %q", branch, got)
		}
	}
	if after := checkoutState(t, dir); after != before {
		t.Fatalf("the user's checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A task a person forces through after its question is committed like one that completed: the work on the branch is
// what the agent left.
func TestAForcedTaskIsCommitted(t *testing.T) {
	dir, _ := gitWorkspace(t)
	writeFile(t, dir, "plan.sim.yaml", `tasks:
  "1":
    - output: |
        I wrote a draft of shared.txt but I am not sure it is right.
        QUESTION: Should the file hold the run id or the date?
        OPTIONS:
        A) The run id  B) The date
      sh: 'echo draft > shared.txt'
`)
	env := []string{"ORCH_REDIS_URL=" + isolatedRedis(t), "ORCH_BRAIN=heuristic"}
	r := orchEnv(t, dir, env, nil, "run", "--agent", "sim", "plan.md")
	must(t, r, 3, "NEEDS HUMAN INPUT")
	id := runID(t, r)
	must(t, orchEnv(t, dir, env, nil, "escalation", "resolve", id, "--force-continue", "--acknowledge-risk"), 0)
	must(t, orchEnv(t, dir, env, nil, "resume", id), 0, "Branch orch/"+id+": 1 commit")
	if got := gitT(t, dir, "show", "orch/"+id+":shared.txt"); got != "draft" {
		t.Fatalf("the forced task's work is not on the branch: %q", got)
	}
	if subject := gitT(t, dir, "log", "-1", "--format=%s", "orch/"+id); subject != "Task 1: Write the shared file" {
		t.Fatalf("commit subject %q", subject)
	}
}

// removeSettled removes dir, trying again while something still writes in it, up to patience.
func removeSettled(dir string, patience time.Duration) {
	for deadline := time.Now().Add(patience); os.RemoveAll(dir) != nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
}
