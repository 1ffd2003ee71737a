// Package workspace gives every run a place of its own to work: in a git repository, a worktree on the run's own
// branch, where each completed task becomes a commit; in a plain directory, the directory itself, held by one run at
// a time.
//
// The user's checkout is never changed. A worktree shares the repository's objects and refs but has its own HEAD,
// index and files; orch creates the run's branch, commits on it in the worktree, and removes the worktree (never the
// branch) when the run ends. Everything here runs the real git (2.25 or later, for `worktree` and `rev-list`).
package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// git runs git in dir and returns its standard output, trimmed. Repositories orch works in may belong to another
// user than orch's own (a service running as root on a user's checkout): they are trusted on the command line, the
// one place git takes safe.directory from besides the user's and the system's configuration. Nothing prompts: a
// remote that wants a password fails at once.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	// Hooks and an fsmonitor are programs the repository names: the agent could have written them (a Docker agent
	// writes the repository's git directory), and orch runs none of them.
	full := append([]string{"-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	cmd.Env = append(cmd.Env, env...)
	if cmd.SysProcAttr = asOwner(dir); cmd.SysProcAttr != nil {
		// Another user's git cannot read root's configuration; orch sets what it needs on the command line.
		cmd.Env = append(cmd.Env, "HOME=/", "GIT_CONFIG_GLOBAL=/dev/null")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Toplevel is the root of the work tree that holds dir, or ErrNotRepository.
func Toplevel(ctx context.Context, dir string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", ErrNotRepository // without git, every directory is a plain one
	}
	out, err := git(ctx, dir, nil, "rev-parse", "--show-toplevel")
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
	out, err := git(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil || out == "" {
		return "", fmt.Errorf("%q names no commit in %s", ref, dir)
	}
	return out, nil
}

// CurrentBranch names what HEAD is at in the repository at dir: its branch, or the commit when HEAD is detached.
func CurrentBranch(ctx context.Context, dir, commit string) string {
	if name, err := git(ctx, dir, nil, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil && name != "" {
		return name
	}
	return Short(commit)
}

// RemoteURL is the URL of remote name in the repository at dir.
func RemoteURL(ctx context.Context, dir, name string) (string, error) {
	return git(ctx, dir, nil, "remote", "get-url", "--", name)
}

// Stat is what a branch holds against its base.
type Stat struct {
	Head         string
	Commits      int
	FilesChanged int
	Insertions   int
	Deletions    int
}

// StatOf compares the worktree's HEAD with base: how many commits, files, lines.
func StatOf(ctx context.Context, dir, base string) (Stat, error) {
	head, err := git(ctx, dir, nil, "rev-parse", "HEAD")
	if err != nil {
		return Stat{}, err
	}
	st := Stat{Head: head}
	n, err := git(ctx, dir, nil, "rev-list", "--count", base+"..HEAD")
	if err != nil {
		return Stat{}, err
	}
	st.Commits, _ = strconv.Atoi(n)
	short, err := git(ctx, dir, nil, "diff", "--shortstat", base, "HEAD")
	if err != nil {
		return Stat{}, err
	}
	st.FilesChanged, st.Insertions, st.Deletions = parseShortstat(short)
	return st, nil
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

// Dirty reports whether the worktree at dir has changes not committed (untracked files included).
func Dirty(ctx context.Context, dir string) (bool, error) {
	out, err := git(ctx, dir, nil, "status", "--porcelain", "--untracked-files=all")
	return out != "", err
}

// Commit records everything the worktree at dir holds as one commit by who, with message msg, and returns the new
// commit; "" when there was nothing to commit (no empty commits). The repository's hooks do not run: the commit
// records the agent's work as it is, and the team's own checks judge it on the branch.
func Commit(ctx context.Context, dir string, who Identity, msg string) (string, error) {
	if _, err := git(ctx, dir, nil, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := git(ctx, dir, nil, "diff", "--cached", "--quiet"); err == nil {
		return "", nil
	}
	if _, err := git(ctx, dir, who.env(), "-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify",
		"--cleanup=verbatim", "-m", msg); err != nil {
		return "", err
	}
	return git(ctx, dir, nil, "rev-parse", "HEAD")
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
