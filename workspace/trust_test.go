package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/internal/httpdeadline/deadlinetest"
	"github.com/orchrun/orch/jobs"
)

// The tests of this file play an agent that wants orch's git to run its programs on the host, or to take its
// history for the run's: it writes every configuration git could read, links the worktree's .git elsewhere, forges
// objects. Each planted program only touches a marker file named after what planted it; a marker means orch ran it.

// marks is a directory of marker files and the commands that make them.
type marks struct {
	dir string
	t   *testing.T
}

func newMarks(t *testing.T) marks {
	return marks{dir: t.TempDir(), t: t}
}

// cmd is a shell command that leaves marker name.
func (m marks) cmd(name string) string {
	return "touch " + filepath.Join(m.dir, strings.NewReplacer("/", "_", " ", "_").Replace(name))
}

// script writes an executable script that leaves marker name, and returns its path.
func (m marks) script(dir, name string) string {
	m.t.Helper()
	p := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name))
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+m.cmd(name)+"\ncat >/dev/null 2>&1 || true\n"), 0o755); err != nil {
		m.t.Fatal(err)
	}
	return p
}

func (m marks) left() []string {
	m.t.Helper()
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		m.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// hookNames are the hooks githooks(5) documents that a local git command can run.
var hookNames = []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout",
	"pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
	"p4-post-changelist", "p4-pre-submit", "post-index-change"}

// evilConfig is, for every key of execKeys, a setting that runs a program leaving a marker named after the key and
// where, with the scripts it needs under dir. Drivers, tools and remotes are named "evil"; the worktree's
// .gitattributes selects the drivers for every file.
func evilConfig(m marks, dir, where string) [][2]string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		m.t.Fatal(err)
	}
	hooks := filepath.Join(dir, "hooks-"+where)
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		m.t.Fatal(err)
	}
	for _, h := range hookNames {
		m.script(hooks, where+" hook "+h)
		_ = os.Rename(filepath.Join(hooks, strings.NewReplacer("/", "_", " ", "_").Replace(where+" hook "+h)), filepath.Join(hooks, h))
	}
	var kv [][2]string
	for _, k := range execKeys {
		key := strings.ReplaceAll(k, "*", "evil")
		name := where + " " + key
		var v string
		switch key {
		case "core.hookspath":
			v = hooks
		case "core.fsmonitor", "core.editor", "core.pager", "sequence.editor", "core.askpass", "core.sshcommand",
			"core.gitproxy", "gpg.program", "gpg.evil.program", "diff.external", "imap.tunnel", "sendemail.smtpserver",
			"instaweb.httpd", "web.browser", "man.viewer":
			v = m.script(dir, name)
		case "commit.gpgsign", "tag.gpgsign", "push.gpgsign", "log.showsignature":
			v = "true"
		case "diff.tool", "merge.tool":
			v = "evil"
		case "pager.evil":
			// pager.<cmd> is for a command: diff and log are the ones that page.
			kv = append(kv, [2]string{"pager.diff", m.script(dir, where+" pager.diff")},
				[2]string{"pager.log", m.script(dir, where+" pager.log")})
			continue
		case "alias.evil":
			v = "!" + m.cmd(name)
		case "submodule.evil.update":
			v = "!" + m.cmd(name)
		case "protocol.allow", "protocol.evil.allow":
			v = "always"
		case "url.evil.insteadof", "url.evil.pushinsteadof":
			// Any URL starting "/" (every local remote of these tests) becomes an ext:: command.
			kv = append(kv, [2]string{strings.Replace(key, "evil", "ext::sh -c "+strings.ReplaceAll(m.cmd(name), " ", "% ")+"% #", 1), "/"})
			continue
		case "include.path", "includeif.evil.path":
			inc := filepath.Join(dir, "included-"+where+".config")
			if out, err := exec.Command("git", "config", "--file", inc, "core.fsmonitor", m.script(dir, name)).CombinedOutput(); err != nil {
				m.t.Fatalf("%v: %s", err, out)
			}
			if key == "includeif.evil.path" {
				key = "includeif.gitdir:/.path"
			}
			v = inc
		case "credential.evil.helper":
			key = "credential.http://127.0.0.1.helper"
			v = "!" + m.cmd(name)
		case "credential.helper", "remote.evil.uploadpack", "remote.evil.receivepack":
			v = "!" + m.cmd(name)
			if strings.HasPrefix(key, "remote.") {
				key = strings.Replace(key, "evil", "origin", 1)
				v = m.cmd(name) + " #"
			}
		case "remote.evil.vcs":
			key, v = "remote.origin.vcs", "evil"
		default:
			v = m.cmd(name)
		}
		kv = append(kv, [2]string{key, v})
	}
	return kv
}

// plant writes settings into a configuration file with the real git, as the agent would.
func plant(t *testing.T, file string, kv [][2]string) {
	t.Helper()
	for _, e := range kv {
		if out, err := exec.Command("git", "config", "--file", file, "--add", e[0], e[1]).CombinedOutput(); err != nil {
			t.Fatalf("planting %s in %s: %v\n%s", e[0], file, err, out)
		}
	}
}

// attributes select the evil drivers for every file, and .gitmodules names an evil submodule update.
func plantAttributes(t *testing.T, m marks, top string) {
	t.Helper()
	write(t, top, ".gitattributes", "* filter=evil diff=evil merge=evil text eol=lf\n")
	write(t, top, ".gitmodules", "[submodule \"evil\"]\n\tpath = sub\n\turl = ./sub\n\tupdate = !"+m.cmd("gitmodules update")+"\n")
}

// Everything orch's git does in a run, with the agent's worst in every configuration git could read: nothing runs.
func TestOrchsGitRunsNothingTheRepositoryOrTheAgentConfigures(t *testing.T) {
	ctx := context.Background()
	m := newMarks(t)
	repo := userRepo(t)
	run(t, repo, "commit", "-q", "-am", "the user's edit")
	remote := filepath.Join(t.TempDir(), "remote.git")
	run(t, t.TempDir(), "init", "-q", "--bare", remote)
	run(t, repo, "remote", "add", "origin", remote)
	common := filepath.Join(repo, ".git")
	scripts := t.TempDir()

	// The repository's own configuration, its hooks, a commondir and an info/attributes, as an agent that could
	// write the repository's git directory (the local sandbox) would leave them.
	plant(t, filepath.Join(common, "config"), evilConfig(m, scripts, "repository config"))
	for _, h := range hookNames {
		if err := os.WriteFile(filepath.Join(common, "hooks", h), []byte("#!/bin/sh\n"+m.cmd("repository hook "+h)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, common, "info/attributes", "* filter=evil diff=evil\n")
	planted := filepath.Join(t.TempDir(), "planted.git")
	run(t, t.TempDir(), "init", "-q", "--bare", planted)
	plant(t, filepath.Join(planted, "config"), evilConfig(m, scripts, "commondir config"))

	mgr := &Manager{Root: filepath.Join(repo, ".orch"), Spares: 1}
	g := newGit(t, repo, "r-1")
	g.Push = "origin"
	wt, err := mgr.Checkout(ctx, "r-1", g)
	if err != nil {
		t.Fatal(err)
	}
	write(t, common, "commondir", planted+"\n")

	// The agent at work: its own git's configuration, orch's git directory of the run (the local sandbox can reach
	// it), attributes and submodules in the worktree, a commit of its own.
	agentGit := filepath.Join(wt.Top, ".git")
	plant(t, filepath.Join(agentGit, "config"), evilConfig(m, scripts, "agent config"))
	plant(t, filepath.Join(mgr.gitDirPath("r-1"), "config"), evilConfig(m, scripts, "orch run config"))
	write(t, mgr.gitDirPath("r-1"), "commondir", planted+"\n")
	plantAttributes(t, m, wt.Dir)
	write(t, wt.Dir, "work.txt", "the agent's work\n")

	ex, err := mgr.Examine(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orch's git directory of the run: commondir was added",
		"orch's git directory of the run: its config was rewritten", "the repository's git directory: file commondir was added"} {
		if !slices.Contains(ex.Tampered, want) {
			t.Errorf("Examine does not say %q: %q", want, ex.Tampered)
		}
	}
	// A commondir in the repository's git directory would have git read refs elsewhere (it does, whatever
	// GIT_COMMON_DIR says): orch refuses to work there until a person removed it.
	if _, err := commitTask(ctx, mgr, wt, "r-1", "1", "t", ""); err == nil || !strings.Contains(err.Error(), "holds a commondir file") {
		t.Fatalf("a commit with a commondir planted in the repository: %v", err)
	}
	if err := os.Remove(filepath.Join(common, "commondir")); err != nil {
		t.Fatal(err)
	}
	// The task's commit was made in orch's own git directory of the run; the branch moves once the repository is
	// sound again.
	if err := mgr.MoveBranch(ctx, wt, g.BaseCommit, nil); err != nil {
		t.Fatal(err)
	}
	sha := wt.git.head()
	if sha == g.BaseCommit || run(t, repo, "rev-parse", g.Branch) != sha {
		t.Fatalf("the branch is not at the task's commit %s", sha)
	}
	g.Head = sha
	if _, err := mgr.Stat(ctx, wt, g.BaseCommit); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Push(ctx, wt, "origin", g.Branch, "", nil); err == nil {
		t.Error("a push through the repository's own ext:: rewrite of its remote succeeded")
	}
	var diff bytes.Buffer
	if err := mgr.Diff(ctx, g, false, &diff); err != nil || !strings.Contains(diff.String(), "the agent's work") {
		t.Fatalf("diff: %v\n%s", err, diff.String())
	}
	write(t, wt.Dir, "half.txt", "left over\n")
	if ref, err := mgr.Remove(ctx, "r-1", g); err != nil || ref == "" {
		t.Fatalf("remove: %q, %v", ref, err)
	}
	g2 := newGit(t, repo, "r-2")
	wt2, err := mgr.Checkout(ctx, "r-2", g2) // from the spare
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Examine(ctx, wt2); err != nil {
		t.Fatal(err)
	}
	if left := m.left(); len(left) > 0 {
		t.Fatalf("orch's git ran what was planted:\n%s", strings.Join(left, "\n"))
	}

	// The planting is real: a git that finds its repository from the worktree, as orch's did, runs it.
	write(t, wt2.Dir, "more.txt", "x\n")
	plant(t, filepath.Join(wt2.Top, ".git", "config"), [][2]string{{"core.fsmonitor", m.script(scripts, "naive fsmonitor")},
		{"filter.evil.clean", m.cmd("naive filter")}})
	plantAttributes(t, m, wt2.Dir)
	cmd := exec.Command("git", "add", "--all")
	cmd.Dir = wt2.Dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	_, _ = cmd.CombinedOutput()
	if left := m.left(); !slices.Contains(left, "naive_filter") {
		t.Fatalf("a naive git in the worktree ran %q: the planted settings would not have run anyway", left)
	}
}

// The agent points its worktree's .git at a git directory it made, with a clean filter its .gitattributes selects:
// the commit runs nothing, holds the files, lands on the run's branch in the repository, and the examination says
// what was changed.
func TestARedirectedDotGitRunsNothingAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	m := newMarks(t)
	repo, mgr, g, wt := firstRun(t)
	evil := filepath.Join(wt.Top, ".evil")
	run(t, wt.Top, "init", "-q", "--bare", evil)
	plant(t, filepath.Join(evil, "config"), [][2]string{{"filter.evil.clean", m.cmd("redirected filter")},
		{"filter.evil.required", "true"}, {"core.fsmonitor", m.script(t.TempDir(), "redirected fsmonitor")}})
	if err := os.RemoveAll(filepath.Join(wt.Top, ".git")); err != nil {
		t.Fatal(err)
	}
	write(t, wt.Top, ".git", "gitdir: .evil\n")
	write(t, wt.Dir, ".gitattributes", "* filter=evil\n")
	write(t, wt.Dir, "work.txt", "the work\n")

	ex, err := mgr.Examine(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Tampered) != 1 || !strings.Contains(ex.Tampered[0], "replaced by a file that points git elsewhere (gitdir: .evil)") {
		t.Fatalf("tampered = %q", ex.Tampered)
	}
	if fi, err := os.Lstat(filepath.Join(wt.Top, ".git")); err != nil || !fi.IsDir() {
		t.Fatalf("the agent's git was not made anew: %v", err)
	}
	sha, err := commitTask(ctx, mgr, wt, "r-1", "1", "t", "")
	if err != nil || sha == "" {
		t.Fatalf("commit: %q, %v", sha, err)
	}
	if left := m.left(); len(left) > 0 {
		t.Fatalf("ran %q", left)
	}
	if got := run(t, repo, "show", g.Branch+":work.txt"); got != "the work" {
		t.Fatalf("the branch holds %q", got)
	}
	if got := run(t, repo, "rev-parse", g.Branch); got != sha {
		t.Fatalf("the branch is at %s, the commit %s", got, sha)
	}
	// The agent's git knows the commit too, and starts clean from it.
	if got := run(t, wt.Dir, "rev-parse", "HEAD"); got != sha {
		t.Fatalf("the agent's git is at %s", got)
	}
	if got := run(t, wt.Dir, "status", "--porcelain"); got != "" {
		t.Fatalf("the agent's git sees changes after the commit:\n%s", got)
	}
}

// The agent's own commits are kept when they build on the run's branch, and only as what their objects really
// hold: a forged object (named for other content) is not taken under its name, objects borrowed from another
// repository on the host are not followed, and history rewritten under the run's branch is not taken at all.
func TestTheAgentsCommitsAreImportedAsData(t *testing.T) {
	ctx := context.Background()
	repo, mgr, g, wt := firstRun(t)
	write(t, wt.Dir, "one.txt", "1\n")
	run(t, wt.Dir, "add", "one.txt")
	run(t, wt.Dir, "commit", "-q", "-m", "the agent's first")
	write(t, wt.Dir, "two.txt", "2\n")
	run(t, wt.Dir, "add", "two.txt")
	run(t, wt.Dir, "commit", "-q", "-m", "the agent's second")
	agentHead := run(t, wt.Dir, "rev-parse", "HEAD")
	// A forged loose object: the name of a blob the repository does not have, holding other content.
	wanted := strings.TrimSpace(hashOf(t, "what the user will add one day\n"))
	forged := filepath.Join(wt.Top, ".git", "objects", wanted[:2], wanted[2:])
	if err := os.MkdirAll(filepath.Dir(forged), 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(wt.Top, ".git", "objects", agentHead[:2], agentHead[2:])
	if data, err := os.ReadFile(real); err == nil {
		if err := os.WriteFile(forged, data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	write(t, wt.Dir, "three.txt", "3\n")
	ex, err := mgr.Examine(ctx, wt)
	if err != nil || len(ex.Tampered) > 0 {
		t.Fatalf("examine: %v, %q", err, ex.Tampered)
	}
	if !strings.Contains(ex.Added, "the agent's second") || !strings.Contains(ex.Added, "3\n") {
		t.Fatalf("what the work adds lacks the agent's messages or lines:\n%s", ex.Added)
	}
	sha, err := commitTask(ctx, mgr, wt, "r-1", "1", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, repo, "log", "--format=%s", g.BaseCommit+".."+g.Branch); got != "Task 1: t\nthe agent's second\nthe agent's first" {
		t.Fatalf("the branch's history:\n%s", got)
	}
	if got := run(t, repo, "rev-parse", sha+"^"); got != agentHead {
		t.Fatalf("orch's commit is on %s, not on the agent's %s", got, agentHead)
	}
	if out, err := exec.Command("git", "-C", repo, "cat-file", "-e", wanted).CombinedOutput(); err == nil {
		t.Fatalf("the forged object entered the repository under the name %s (%s)", wanted, out)
	}
	if out, err := exec.Command("git", "-C", repo, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("fsck after the import: %v\n%s", err, out)
	}

	// Objects borrowed from another repository on the host: the import reads none of them.
	other := t.TempDir()
	run(t, other, "init", "-q")
	write(t, other, "secret.txt", "another repository's secret\n")
	run(t, other, "add", "secret.txt")
	run(t, other, "commit", "-q", "-m", "other")
	secretCommit := run(t, other, "rev-parse", "HEAD")
	head := run(t, wt.Dir, "rev-parse", "HEAD")
	// A commit of the agent's whose parent is the run's head and whose tree is the other repository's.
	alt := filepath.Join(wt.Top, ".git", "objects", "info", "alternates")
	write(t, filepath.Dir(alt), "alternates", filepath.Join(other, ".git", "objects")+"\n"+strings.Join(wt.ReadOnly, "\n")+"\n")
	tree := run(t, wt.Dir, "rev-parse", secretCommit+"^{tree}")
	c := run(t, wt.Dir, "commit-tree", tree, "-p", head, "-m", "borrowed")
	run(t, wt.Dir, "update-ref", "HEAD", c)
	ex, err = mgr.Examine(ctx, wt)
	if err != nil || len(ex.Tampered) != 1 || !strings.Contains(ex.Tampered[0], "borrows objects from elsewhere") {
		t.Fatalf("examine: %v, %q", err, ex.Tampered)
	}
	if _, err := commitTask(ctx, mgr, wt, "r-1", "2", "t", ""); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "cat-file", "-e", secretCommit+"^{tree}").CombinedOutput(); err == nil {
		t.Fatalf("the other repository's tree entered the repository (%s)", out)
	}

	// History rewritten under the run's branch: the files are committed, the agent's history is not.
	before := run(t, repo, "rev-parse", g.Branch)
	run(t, wt.Dir, "reset", "-q", "--soft", g.BaseCommit)
	run(t, wt.Dir, "commit", "-q", "-m", "rewritten")
	rewritten := run(t, wt.Dir, "rev-parse", "HEAD")
	write(t, wt.Dir, "four.txt", "4\n")
	sha, err = commitTask(ctx, mgr, wt, "r-1", "3", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, repo, "rev-parse", sha+"^"); got != before {
		t.Fatalf("orch's commit is on %s, not on the run's head %s", got, before)
	}
	if out, err := exec.Command("git", "-C", repo, "merge-base", "--is-ancestor", rewritten, g.Branch).CombinedOutput(); err == nil {
		t.Fatalf("the rewritten history is on the branch (%s)", out)
	}
}

func hashOf(t *testing.T, content string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The agent's hooks and configuration in its own git run only where the agent runs, never for orch; and the agent
// editing its own git's config, refs or hooks is its business, not tampering.
func TestTheAgentsOwnGitIsItsBusiness(t *testing.T) {
	ctx := context.Background()
	_, mgr, _, wt := firstRun(t)
	run(t, wt.Dir, "config", "user.name", "The Agent")
	write(t, filepath.Join(wt.Top, ".git", "hooks"), "pre-commit", "#!/bin/sh\nexit 0\n")
	run(t, wt.Dir, "branch", "scratch")
	ex, err := mgr.Examine(ctx, wt)
	if err != nil || len(ex.Tampered) > 0 {
		t.Fatalf("examine: %v, %q", err, ex.Tampered)
	}
}

// ExecKey knows the documented keys, whatever their case and subsection, and nothing else.
func TestExecKey(t *testing.T) {
	for _, k := range []string{"core.fsmonitor", "core.hooksPath", "filter.lfs.clean", "filter.a.b.smudge",
		"diff.Image.textconv", "alias.st", "pager.log", "includeIf.gitdir:/x/.path", "url.ext::sh.insteadOf",
		"credential.https://example.com.helper", "remote.origin.receivepack", "protocol.allow", "protocol.ext.allow"} {
		if !ExecKey(k) {
			t.Errorf("ExecKey(%q) = false", k)
		}
	}
	for _, k := range []string{"core.bare", "user.name", "remote.origin.url", "filter.lfs.required", "diff.renames",
		"alias", "pager", "core"} {
		if ExecKey(k) {
			t.Errorf("ExecKey(%q) = true", k)
		}
	}
	seen := map[string]bool{}
	for _, k := range execKeys {
		if seen[k] || k != strings.ToLower(k) {
			t.Errorf("execKeys: %q twice or not lowercase", k)
		}
		seen[k] = true
	}
}

// What orch would be made to read by git's own names for a repository's redirections, all refused.
func TestTheAgentsHeadIsReadAsData(t *testing.T) {
	_, mgr, _, wt := firstRun(t)
	a := mgr.agent(wt)
	head := a.head()
	if !isObjectName(head) {
		t.Fatalf("head %q", head)
	}
	for name, content := range map[string]string{
		"a ref outside refs":   "ref: ../../../../etc/passwd\n",
		"a ref with dotdot":    "ref: refs/heads/../../x\n",
		"not a ref":            "garbage\n",
		"an abbreviated name":  head[:12] + "\n",
		"uppercase hex":        strings.ToUpper(head) + "\n",
		"an oversized HEAD":    strings.Repeat("x", 5000),
		"a NUL in the ref":     "ref: refs/heads/a\x00b\n",
		"a missing loose ref":  "ref: refs/heads/none\n",
		"the branch, plainly ": fmt.Sprintf("ref: refs/heads/%s\n", wt.branch),
	} {
		write(t, a.dir, "HEAD", content)
		got := a.head()
		if name == "the branch, plainly " {
			if got != head {
				t.Errorf("%s: %q", name, got)
			}
			continue
		}
		if got != "" {
			t.Errorf("%s: read %q", name, got)
		}
	}
	if err := os.Remove(filepath.Join(a.dir, "HEAD")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(a.dir, "HEAD")); err != nil {
		t.Fatal(err)
	}
	if got := a.head(); got != "" {
		t.Errorf("a HEAD that is a symbolic link: read %q", got)
	}
}

// A remote that accepts the connection and never answers is an error that names it, after the stall deadline,
// over every transport orch speaks to such a server; a push to one is too.
func TestARemoteThatNeverAnswersIsAnError(t *testing.T) {
	if DefaultStall <= 0 || DefaultStall > time.Minute {
		t.Fatalf("DefaultStall is %s: a remote that does not answer must be an error within a minute", DefaultStall)
	}
	ctx := context.Background()
	addr := deadlinetest.Silent(t)
	for _, url := range []string{"http://" + addr + "/repo.git", "git://" + addr + "/repo.git"} {
		m := &Manager{Root: t.TempDir(), Stall: 2 * time.Second}
		done := make(chan error, 1)
		go func() {
			_, err := m.Checkout(ctx, "r-1", &jobs.Git{URL: url, Branch: "orch/r-1"})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), addr) {
				t.Errorf("%s: %v", url, err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: the clone of a silent remote still waits after 2 minutes", url)
		}
	}

	// A run whose remote stops answering after it was cloned: its push fails the same way.
	repo, m, _, wt := firstRun(t)
	m.Stall = 2 * time.Second
	run(t, repo, "remote", "add", "silent", "http://"+addr+"/repo.git")
	write(t, wt.Dir, "a.txt", "a\n")
	if _, err := commitTask(ctx, m, wt, "r-1", "1", "t", ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Push(ctx, wt, "silent", "orch/r-1", "", nil); err == nil || !errors.Is(err, ErrStalled) {
		t.Errorf("push to a silent remote: %v", err)
	}
}

func TestProtocolOf(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/o/r.git":  "https",
		"HTTP://127.0.0.1/r":          "http",
		"ssh://git@host/r":            "ssh",
		"git@github.com:o/r.git":      "ssh",
		"git://host/r":                "git",
		"/srv/git/r.git":              "file",
		"file:///srv/git/r.git":       "file",
		"../r.git":                    "file",
		"ext::sh -c touch% /tmp/x":    "",
		"fd::17":                      "",
		"evil::https://example.com/r": "",
		"gopher://host/r":             "",
	} {
		if got := protocolOf(url); got != want {
			t.Errorf("protocolOf(%q) = %q, want %q", url, got, want)
		}
	}
}

// branchName agrees with git check-ref-format on the names it is asked about (and refuses a leading dash, as git
// branch does).
func TestBranchNameAgreesWithGit(t *testing.T) {
	for _, name := range []string{"orch/r-k3j9x2m4qa", "orch/r-1.2_x", "main", "a/b/c", "orch/../x", "orch/.hidden",
		"orch/x.lock", "orch//x", "orch/x/", "/orch", "orch/x y", "orch/x~1", "orch/x^", "orch/x:y", "orch/x?",
		"orch/x*", "orch/x[", "orch/x\\y", "orch/x@{1}", "@", "orch/x.", "orch/\x01", "-orch", "orch/-x", "orch/x@y"} {
		err := exec.Command("git", "check-ref-format", "refs/heads/"+name).Run()
		want := err == nil && !strings.HasPrefix(name, "-") // git branch refuses those too
		if got := branchName(name); got != want {
			t.Errorf("branchName(%q) = %v, git says %v", name, got, want)
		}
	}
}
