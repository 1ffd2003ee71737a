// Package workspace gives every run a place of its own to work: in a git repository, a worktree on the run's own
// branch, where each completed task becomes a commit; in a plain directory, the directory itself, held by one run at
// a time.
//
// The user's checkout is never changed, and nothing in a run's worktree is trusted: the agent may have written any
// of it. A run's worktree is a directory of files with a git repository of the agent's own inside (its `.git`,
// borrowing the repository's objects read-only), so that the agent's git works and changes nothing outside the run;
// orch keeps its own git directory for the run elsewhere, with a configuration it writes, and every git command orch
// runs names its git directory and work tree outright. The run's branch lives in the repository, moved by orch alone.
// Everything here runs the real git (2.25 or later).
package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orchrun/orch/internal/safetext"
)

// ErrNotRepository says a directory is not inside a git repository.
var ErrNotRepository = errors.New("not a git repository")

// Identity is who orch's commits are by.
type Identity struct {
	Name  string
	Email string
}

// env makes who the author and the committer of what git commits.
func (who Identity) env() []string {
	return []string{"GIT_AUTHOR_NAME=" + who.Name, "GIT_AUTHOR_EMAIL=" + who.Email,
		"GIT_COMMITTER_NAME=" + who.Name, "GIT_COMMITTER_EMAIL=" + who.Email}
}

// DefaultIdentity is orch's own: a user's identity is used only when configured.
var DefaultIdentity = Identity{Name: "orch", Email: "orch@localhost"}

// gitError is a failed git command, with what git said.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// A git command orch runs on the host is one of three kinds, by what it may read:
//
//   - in a run (add, read-tree, write-tree, commit-tree, diff of the worktree): the git directory is orch's own for
//     the run (outside the worktree, never given to a sandbox), the work tree is named outright, the objects are the
//     repository's object directory, and the configuration is the file orch writes in its git directory and nothing
//     else — no system, global or repository configuration, no include of anything;
//   - on the repository (update-ref, rev-parse, for-each-ref, clone and fetch of a mirror, push): the repository's
//     git directory named outright, its own configuration (the owner's), with every key that makes git run a program
//     overridden on the command line, an empty work tree of orch's;
//   - over the network (clone, fetch, push, ls-remote) besides: the system and global configuration too (credential
//     helpers, proxies are set there), only the protocol the remote's URL uses, and a deadline on silence.
//
// Nothing is discovered: no command looks for a `.git` file or directory, a `commondir` or a `gitdir` file, which is
// how an agent's worktree could point orch's git at a configuration the agent wrote.

// gitCmd is one git command to run.
type gitCmd struct {
	// gitDir is the git directory (--git-dir); workTree the work tree (--work-tree), which is also where git runs.
	gitDir, workTree string
	// objects is the object directory when it is not the git directory's own (GIT_OBJECT_DIRECTORY), alternates
	// more object directories to read (GIT_ALTERNATE_OBJECT_DIRECTORIES).
	objects    string
	alternates []string
	// userConfig reads the system and the global configuration besides the git directory's own: network commands,
	// for the credential helpers and proxies people set there.
	userConfig bool
	// remote is the URL a network command talks to: only its protocol is allowed, and the command gets a deadline
	// on silence (Manager.Stall).
	remote string
	// stall is how long a network command may go without a byte on stderr (its progress) before it is killed.
	stall time.Duration
	// plain names no git directory or work tree: git runs in workTree and finds its repository from there as the
	// user's git would (the user's own checkout), or works outside any (init).
	plain bool
	// owner is a path whose owner git runs as, when orch runs as root on someone else's repository.
	owner string
	env   []string
	stdin io.Reader
	// stdout receives the output; nil keeps it, trimmed, as the result.
	stdout io.Writer
}

// safety are the settings every git command orch runs gets on its command line, which wins over every configuration
// file: no program named by a configuration runs (hooks, fsmonitor, pager, editor, external diff, signing, automatic
// maintenance), submodules are never entered, and another user's repository is not refused (orch runs as root on a
// user's checkout). The configuration keys that run programs are listed, with where git documents them, in
// execkeys.go; the ones a command of orch's could reach are set here, the others orch never runs a command that
// reads.
var safety = []string{
	"safe.directory=*",
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.pager=cat",
	"core.editor=false",
	"sequence.editor=false",
	"core.untrackedCache=false",
	"diff.external=",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"push.gpgSign=false",
	"log.showSignature=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"submodule.recurse=false",
	"fetch.recurseSubmodules=false",
	"push.recurseSubmodules=no",
	"diff.ignoreSubmodules=all",
	"status.submoduleSummary=false",
	"checkout.workers=0", // as many as there are CPUs: most of a big checkout is the kernel making files
}

// offline are the settings of a command that talks to no remote: no transport at all, no credential helper, and no
// per-user attributes or ignore file (their defaults are under HOME).
var offline = []string{"protocol.allow=never", "credential.helper=", "core.sshCommand=", "core.gitProxy=",
	"core.askPass=", "core.attributesFile=/dev/null", "core.excludesFile=/dev/null"}

// baseEnv is the environment of every git command orch runs: made here, not inherited, so that nothing of orch's own
// (its tokens) reaches a program git runs, and nothing in orch's environment redirects git (GIT_DIR,
// GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF…).
func baseEnv() []string {
	env := []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "GIT_EDITOR=false",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_ATTR_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_LAZY_FETCH=1"}
	for _, k := range []string{"PATH", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// networkEnv is what a network command needs of orch's environment besides: where the user's configuration and keys
// are (HOME), the ssh agent, proxies and certificates, and the operator's own choice of ssh command.
var networkEnv = []string{"HOME", "USER", "LOGNAME", "SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "GIT_SSL_NO_VERIFY", "GIT_PROXY_SSL_CAINFO",
	"XDG_CONFIG_HOME"}

// DefaultStall is how long a network git command may go silent before it is taken for a remote that does not
// answer. Progress (which git prints to stderr as objects count, compress and transfer) resets it, so a long clone
// that moves is never cut short.
const DefaultStall = 45 * time.Second

// run runs c with args and returns its standard output, trimmed (or "" when c.stdout takes it).
func (c gitCmd) run(ctx context.Context, args ...string) (string, error) {
	dir := c.workTree
	if dir == "" {
		// A git directory named without a work tree takes the current directory for one: the git directory itself,
		// where no command orch runs this way looks for files.
		dir = c.gitDir
	}
	if !c.plain {
		if err := noCommondir(c.gitDir); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, "git", c.args(dir, args)...)
	cmd.Dir = dir
	cmd.Env = c.environ(dir)
	if c.owner != "" {
		if cmd.SysProcAttr = asOwner(c.owner); cmd.SysProcAttr != nil && c.userConfig {
			// Another user's git cannot read root's configuration; the network needs nothing of it.
			cmd.Env = append(cmd.Env, "HOME=/", "GIT_CONFIG_GLOBAL=/dev/null")
		}
	}
	// git runs helpers of its own (git-remote-http, ssh, index-pack): the whole group goes when the command is
	// stopped, or a helper left behind would hold its pipes, and the wait, open.
	inGroup(cmd)
	dieWithOrch(cmd)
	runtime.LockOSThread() // until git has ended: see dieWithOrch
	defer runtime.UnlockOSThread()
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdin = c.stdin
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	stderr := &stallWriter{}
	cmd.Stderr = stderr
	var stalled *stallWatch
	if c.remote != "" {
		stall := c.stall
		if stall <= 0 {
			stall = DefaultStall
		}
		stalled = watchStall(cmd, stderr, stall)
	}
	if err := runWatched(cmd, stalled); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if stalled != nil && stalled.fired() {
			return "", fmt.Errorf("%s did not answer for %s (git %s): %w", redactURL(c.remote), stalled.after,
				args[0], ErrStalled)
		}
		return "", &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// args is git's command line for args: orch's safety settings, the protocols allowed (none offline), and the git
// and work directories, before args.
func (c gitCmd) args(dir string, args []string) []string {
	full := make([]string, 0, 2*(len(safety)+len(offline))+8+len(args))
	for _, kv := range safety {
		full = append(full, "-c", kv)
	}
	rules := offline
	if c.remote != "" {
		rules = protocolRules(c.remote)
	}
	for _, kv := range rules {
		full = append(full, "-c", kv)
	}
	full = append(full, "--no-pager")
	if !c.plain {
		full = append(full, "--git-dir="+c.gitDir, "--work-tree="+dir)
	}
	return append(full, args...)
}

// environ is git's environment: orch's base, c's own, the object directories c names, and either the user's
// network settings (userConfig) or no configuration of the user's or the system's at all.
func (c gitCmd) environ(dir string) []string {
	env := append(baseEnv(), c.env...)
	if !c.plain {
		// The git directory is its own common directory: a "commondir" file written into it (git follows one to the
		// directory whose config, refs and hooks it then uses) is not read.
		env = append(env, "GIT_COMMON_DIR="+c.gitDir)
	}
	if c.objects != "" {
		env = append(env, "GIT_OBJECT_DIRECTORY="+c.objects)
	}
	if len(c.alternates) > 0 {
		env = append(env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.Join(c.alternates, string(os.PathListSeparator)))
	}
	if !c.userConfig {
		// No configuration of the user's or the system's; the per-user ignore and attributes files HOME would lead
		// to are /dev/null (offline).
		return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	}
	for _, k := range networkEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runWatched starts cmd and waits for it, with the stall watch (if any) running meanwhile.
func runWatched(cmd *exec.Cmd, stalled *stallWatch) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if stalled == nil {
		return cmd.Wait()
	}
	stalled.start()
	defer stalled.stop()
	return cmd.Wait()
}

// ErrStalled says a remote stopped answering in the middle of a git command.
var ErrStalled = errors.New("the remote does not answer")

// protocolRules allows the one protocol url uses and nothing else: no `ext::` command, no remote helper, no other
// transport a configuration's url.<base>.insteadOf could rewrite the URL to.
func protocolRules(url string) []string {
	rules := []string{"protocol.allow=never"}
	if p := protocolOf(url); p != "" {
		rules = append(rules, "protocol."+p+".allow=always")
	}
	return rules
}

// protocolOf is the git protocol a URL names: "https", "http", "ssh", "git" or "file"; "" for what orch does not
// speak (a remote helper's "name::address", an unknown scheme).
func protocolOf(url string) string {
	if scheme, _, ok := strings.Cut(url, "://"); ok {
		switch scheme = strings.ToLower(scheme); scheme {
		case "https", "http", "ssh", "git", "file":
			return scheme
		case "git+ssh", "ssh+git":
			return "ssh"
		}
		return ""
	}
	if strings.Contains(url, "::") {
		return "" // transport::address, a remote helper
	}
	// git's own rule: a colon before any slash is the scp-like ssh syntax, host:path; otherwise a local path.
	colon, slash := strings.IndexByte(url, ':'), strings.IndexByte(url, '/')
	if colon > 0 && (slash < 0 || colon < slash) && !filepath.IsAbs(url) {
		return "ssh"
	}
	return "file"
}

// stallWriter keeps the tail of what git prints on stderr and notes when it last printed.
type stallWriter struct {
	mu   sync.Mutex
	buf  []byte
	last time.Time
}

// stderrKeep bounds what is kept of git's stderr: its last lines say what went wrong; progress goes on for long.
const stderrKeep = 16 << 10

func (w *stallWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - stderrKeep; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	w.last = time.Now()
	return len(p), nil
}

func (w *stallWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Progress lines end in carriage returns: the last state of each is what a person would have seen.
	var lines []string
	for _, l := range strings.Split(string(w.buf), "\n") {
		if i := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); i >= 0 {
			l = l[i+1:]
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func (w *stallWriter) quiet() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.last)
}

// stallWatch kills a command that prints nothing for after.
type stallWatch struct {
	cmd   *exec.Cmd
	out   *stallWriter
	after time.Duration
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	fire  bool
}

func watchStall(cmd *exec.Cmd, out *stallWriter, after time.Duration) *stallWatch {
	return &stallWatch{cmd: cmd, out: out, after: after, done: make(chan struct{})}
}

func (s *stallWatch) start() {
	s.out.Write(nil) // the clock starts with the command
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(min(s.after/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				if s.out.quiet() >= s.after {
					s.mu.Lock()
					s.fire = true
					s.mu.Unlock()
					_ = killGroup(s.cmd)
					return
				}
			}
		}
	}()
}

func (s *stallWatch) stop() {
	close(s.done)
	s.wg.Wait()
}

func (s *stallWatch) fired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fire
}

// userGit runs git in the user's own checkout at dir: the user's repository, before or beside any run. Only
// commands that read refs and settings run this way. When dir is the top of a checkout whose .git is a directory,
// that directory is named outright (a "commondir" written into it is not followed); otherwise git finds the
// repository from dir as the user's git does.
func userGit(ctx context.Context, dir string, args ...string) (string, error) {
	c := gitCmd{plain: true, workTree: dir, owner: dir}
	if dotGit := filepath.Join(dir, ".git"); isDir(dotGit) {
		c = gitCmd{gitDir: dotGit, workTree: dir, owner: dir}
	}
	return c.run(ctx, args...)
}

// Toplevel is the root of the work tree that holds dir, or ErrNotRepository.
func Toplevel(ctx context.Context, dir string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", ErrNotRepository // without git, every directory is a plain one
	}
	out, err := userGit(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) && strings.Contains(ge.stderr, "not a git repository") {
			return "", ErrNotRepository
		}
		return "", err
	}
	if out == "" {
		return "", ErrNotRepository // a bare repository, or inside .git: no work tree to start from
	}
	return out, nil
}

// Resolve is the commit ref names in the repository at dir.
func Resolve(ctx context.Context, dir, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("%q is not a git ref", ref)
	}
	out, err := userGit(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil || out == "" {
		return "", fmt.Errorf("%q names no commit in %s", ref, dir)
	}
	return out, nil
}

// CurrentBranch names what HEAD is at in the repository at dir: its branch, or the commit when HEAD is detached.
func CurrentBranch(ctx context.Context, dir, commit string) string {
	if name, err := userGit(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil && name != "" {
		return name
	}
	return Short(commit)
}

// RemoteURL is the URL of remote name in the repository at dir.
func RemoteURL(ctx context.Context, dir, name string) (string, error) {
	return userGit(ctx, dir, "remote", "get-url", "--", name)
}

// commonDir is the git directory that holds the objects and refs of the user's repository whose work tree is top:
// its .git directory, whatever files in it say (a "commondir" there is no part of a repository's own git directory:
// git would follow it elsewhere); or, when top is itself a linked worktree or a submodule's checkout (its .git a
// file), the directory git finds from it.
func commonDir(ctx context.Context, top string) (string, error) {
	if dotGit := filepath.Join(top, ".git"); isDir(dotGit) {
		return dotGit, nil
	}
	out, err := userGit(ctx, top, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("finding the git directory of %s: %w", top, err)
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(top, out)
	}
	return filepath.Clean(out), nil
}

// noCommondir refuses a git directory that holds a "commondir" file. Only the administrative directory of a linked
// worktree has one; in a repository's own git directory (or one of orch's) it is planted, and git would take refs
// from the directory it names whatever GIT_COMMON_DIR says (its files ref store reads the file itself): orch's
// branch would be written, and its base read, elsewhere.
func noCommondir(gitDir string) error {
	p := filepath.Join(gitDir, "commondir")
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	s, _ := readSmall(p)
	return fmt.Errorf("the git directory %s holds a commondir file (naming %q), which would make git use another "+
		"repository's refs: it is not git's own doing there; remove it (and look for what else was changed) before "+
		"orch works in this repository again", gitDir, oneLine(s))
}

// isDir reports whether p is a directory, not through a symbolic link.
func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// Stat is what a branch holds against its base.
type Stat struct {
	Head         string
	Commits      int
	FilesChanged int
	Insertions   int
	Deletions    int
}

// parseShortstat reads " 3 files changed, 10 insertions(+), 2 deletions(-)"; either count may be missing.
func parseShortstat(s string) (files, ins, del int) {
	for _, part := range strings.Split(s, ",") {
		fields := strings.Fields(part)
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(fields[1], "file"):
			files = n
		case strings.HasPrefix(fields[1], "insertion"):
			ins = n
		case strings.HasPrefix(fields[1], "deletion"):
			del = n
		}
	}
	return files, ins, del
}

// TaskMessage is the commit message of a task: subject "Task <id>: <title>", the brain's summary, and the trailers
// that tie the commit to its run.
func TaskMessage(runID, taskID, title, summary string) string {
	subject := firstLine(fmt.Sprintf("Task %s: %s", taskID, title))
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString("\n\n")
	if s := strings.TrimSpace(summary); s != "" {
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Orch-Run: %s\nOrch-Task: %s\n", runID, taskID)
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// Short is how orch abbreviates a commit in what it tells people: 12 hex digits.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// redactURL drops the credentials from a URL before it goes into a message.
func redactURL(u string) string { return safetext.WithoutUserinfo(u) }
