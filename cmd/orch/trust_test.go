package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostileAgent is what an agent that wants out of its worktree does with the paths its own git gives away: it
// finds the repository's git directory from its objects/info/alternates and writes a hook, rewinds the user's
// branch, plants a commondir; then it points its worktree's .git at a git directory it made, with a clean filter its
// .gitattributes selects for every file, whose program leaves a marker; and it says it is done.
func hostileAgent(marker string) string {
	return `cmd:sh -c '
objs=$(head -n 1 .git/objects/info/alternates)
repo=$(dirname "$objs")
echo "#!/bin/sh" > "$repo/hooks/post-checkout" 2>/dev/null && chmod +x "$repo/hooks/post-checkout" 2>/dev/null && echo HOOK-""WRITTEN
echo 0000000000000000000000000000000000000001 > "$repo/refs/heads/main" 2>/dev/null && echo REF-""WRITTEN
echo /nowhere > "$repo/commondir" 2>/dev/null && echo COMMONDIR-""WRITTEN
touch "$objs/planted" 2>/dev/null && echo OBJECTS-""WRITTEN
mkdir -p .evil/refs .evil/objects && echo "ref: refs/heads/main" > .evil/HEAD
printf "[filter \"x\"]\n\tclean = touch ` + marker + `\n\trequired = true\n" > .evil/config
rm -rf .git && echo "gitdir: .evil" > .git
echo "* filter=x" > .gitattributes
echo work > work.txt
echo "Done. All tests pass."'`
}

// A hostile agent in the Docker sandbox reaches nothing of the repository, and the git orch runs afterwards runs
// nothing of its; the run stops on a security question that says what the agent changed.
func TestAHostileAgentInDockerReachesOnlyItsWorktree(t *testing.T) {
	t.Parallel()
	image, bin := dockerSetup(t)
	dir, before := hostileRepo(t)
	marker := filepath.Join(t.TempDir(), "filter-ran")
	cmd := exec.Command(bin, "run", "--sandbox", "docker", "--image", image, "--agent", hostileAgent(marker), "--json",
		"plan.md")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ORCH_REDIS_URL=", "ANTHROPIC_API_KEY=", "ORCH_SANDBOX=", "ORCH_GIT_PUSH=")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("exit %d, want 3 (parked on a question):\n%s", code, out)
	}
	for _, w := range []string{"HOOK-WRITTEN", "REF-WRITTEN", "COMMONDIR-WRITTEN", "OBJECTS-WRITTEN"} {
		if strings.Contains(string(out), w) {
			t.Errorf("the agent says %s", w)
		}
	}
	e := lastEvent(t, string(out), "escalation")
	q, _ := e["question"].(string)
	if e["trigger"] != "security" || !strings.Contains(q, "replaced by a file that points git elsewhere (gitdir: .evil)") {
		t.Fatalf("the question: %v", e)
	}
	hostileAfter(t, dir, before, marker)
}

// The same agent in the local sandbox, where it runs as the repository's owner and can write the repository's git
// directory: orch's own git still runs nothing of it, and the question names every change, the hook and the
// commondir in the repository included. The commondir stops orch's work there until a person removes it.
func TestAHostileLocalAgentIsCaught(t *testing.T) {
	t.Parallel()
	dir, _ := hostileRepo(t)
	marker := filepath.Join(t.TempDir(), "filter-ran")
	r := orch(t, dir, "", "run", "--agent", hostileAgent(marker), "--json", "plan.md")
	if r.code != 3 {
		t.Fatalf("want exit 3, got %s", r)
	}
	e := lastEvent(t, r.stdout, "escalation")
	q, _ := e["question"].(string)
	for _, want := range []string{"replaced by a file that points git elsewhere (gitdir: .evil)",
		"the repository's git directory: hook post-checkout was added", "the repository's git directory: file commondir was added"} {
		if e["trigger"] != "security" || !strings.Contains(q, want) {
			t.Errorf("the question does not say %q: %v", want, e)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent's clean filter ran")
	}
}

// hostileRepo is a user's repository with a one-task plan, and what its git directory holds that the agent must not
// change: the branch, the hooks.
func hostileRepo(t *testing.T) (dir string, before map[string]string) {
	t.Helper()
	dir = t.TempDir()
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the repository's owner must reach it
	}
	os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Plan\n\n## Milestone 1: Work\n\n### Task 1.1: Do the work\nWrite work.txt.\n"), 0o644)
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "-R", "1000:1000", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	before = map[string]string{"main": gitT(t, dir, "rev-parse", "main"), "hooks": hooksOf(t, dir)}
	return dir, before
}

func hooksOf(t *testing.T, dir string) string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, ".git", "hooks"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// hostileAfter checks that the repository is as it was and that nothing the agent planted ran on the host.
func hostileAfter(t *testing.T, dir string, before map[string]string, marker string) {
	t.Helper()
	if got := gitT(t, dir, "rev-parse", "main"); got != before["main"] {
		t.Errorf("main moved from %s to %s", before["main"], got)
	}
	if got := hooksOf(t, dir); got != before["hooks"] {
		t.Errorf("the repository's hooks changed: %q, were %q", got, before["hooks"])
	}
	for _, p := range []string{filepath.Join(dir, ".git", "commondir"), filepath.Join(dir, ".git", "objects", "planted")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent's clean filter ran on the host")
	}
	if status := gitT(t, dir, "status", "--porcelain"); status != "" {
		t.Errorf("the user's checkout changed:\n%s", status)
	}
}
