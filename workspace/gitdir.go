package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A run in a repository has three places:
//
//   - the repository's git directory (the user's .git, or this worker's mirror of a URL): its objects, and the run's
//     branch, which orch alone moves;
//   - orch's own git directory of the run, under the manager's root (gitdirs/<run id>): HEAD (the commit the worktree
//     holds), the index, and a configuration orch writes; it borrows the repository's objects (GIT_OBJECT_DIRECTORY)
//     and is never given to a sandbox;
//   - the worktree (worktrees/<run id>): the files, and the agent's own git repository in its .git, a directory orch
//     makes afresh, on the run's branch at the run's head, that borrows the repository's objects read-only through
//     its objects/info/alternates. The agent's git works there (status, diff, log, commit) and reaches nothing but
//     that directory; orch never runs git in it, and reads of it only its HEAD and the objects of the commits it
//     made, as data (agentcommits.go).

// repository is what orch knows of the repository a run works on, read from its git directory.
type repository struct {
	dir     string // the git directory: objects, refs, config
	objects string // its object directory
	// readOnly are the object directories the agent's git reads: the repository's and those it borrows from
	// (objects/info/alternates), each a real path.
	readOnly []string
	// config is the part of the repository's configuration that says how to read its files and objects, copied into
	// the configurations orch writes (git-config(1): core.* of the working tree, extensions.objectFormat).
	config []string
	// owner is a path whose owner git runs as (the user's checkout, or the mirror).
	owner string
	// remotes are the URLs of the repository's remotes ("remote.NAME.url=URL", pushurl too), which the agent's git
	// knows under the same names: a push the agent is allowed (an approval) goes where the user's would. Nothing
	// else of a remote's is copied (its receivepack, uploadpack, vcs or proxy would choose a program).
	remotes []string
	// mine says the repository is orch's own mirror of a run's URL: nobody commits to it, and its branches are orch's
	// record of where runs were on this machine, moved as the runs say (setBranch).
	mine bool
}

// copiedConfig are the keys of the repository's configuration that orch's own and the agent's git take over: how the
// repository's files look on this filesystem and how its objects are named. None runs a program.
var copiedConfig = []string{"core.filemode", "core.symlinks", "core.ignorecase", "core.precomposeunicode",
	"core.protecthfs", "core.protectntfs", "extensions.objectformat"}

// openRepository reads the repository whose git directory is dir; owner is the path whose owner git runs as.
func openRepository(ctx context.Context, dir, owner string) (*repository, error) {
	dir = filepath.Clean(dir)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	r := &repository{dir: dir, objects: filepath.Join(dir, "objects"), owner: owner}
	if fi, err := os.Stat(r.objects); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a git directory (it has no objects)", dir)
	}
	// --file reads that one file: no include is followed (git-config(1), --includes defaults to off with --file).
	out, err := r.git("config", "--file", filepath.Join(dir, "config"), "--get-regexp",
		`^(core\.(filemode|symlinks|ignorecase|precomposeunicode|protecthfs|protectntfs)|extensions\.objectformat|remote\..*\.(url|pushurl))$`).run(ctx)
	var ge *gitError
	if err != nil && !(errors.As(err, &ge) && ge.stderr == "") { // exit 1 with nothing said: none of the keys is set
		return nil, fmt.Errorf("reading %s/config: %w", dir, err)
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case !ok || strings.ContainsAny(k+v, "\n\x00") || strings.Contains(k, "="):
		case slices.Contains(copiedConfig, k) && !strings.ContainsAny(v, "\"\\"):
			r.config = append(r.config, k+"="+v)
		case strings.HasPrefix(k, "remote."):
			r.remotes = append(r.remotes, k+"="+v)
		}
	}
	r.readOnly = objectDirs(r.objects)
	return r, nil
}

// objectDirs is dir and the object directories it borrows from, as git follows them: objects/info/alternates, one
// directory a line, relative to the object directory, nested up to five deep (git's own limit).
func objectDirs(dir string) []string {
	var dirs []string
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || slices.Contains(dirs, real) || depth > 5 {
			return
		}
		dirs = append(dirs, real)
		data, err := os.ReadFile(filepath.Join(real, "info", "alternates"))
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(real, line)
			}
			walk(filepath.Clean(line), depth+1)
		}
	}
	walk(dir, 0)
	return dirs
}

// git is a command on the repository's refs and settings.
func (r *repository) git(args ...string) gitCall {
	return gitCall{c: gitCmd{gitDir: r.dir, owner: r.owner}, args: args}
}

// gitCall is a gitCmd with its arguments, run by run.
type gitCall struct {
	c    gitCmd
	args []string
}

func (g gitCall) run(ctx context.Context) (string, error) { return g.c.run(ctx, g.args...) }

// configText is the configuration orch writes for a git directory of its own, or for the agent's: the repository's
// format and the settings copied from it, and extra ("section.key=value") after them.
func (r *repository) configText(bare bool, extra ...string) []byte {
	sections := map[string][]string{}
	var order []string
	add := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		header := ""
		if i, j := strings.IndexByte(k, '.'), strings.LastIndexByte(k, '.'); i == j {
			header = "[" + k[:i] + "]"
		} else {
			header = fmt.Sprintf("[%s %s]", k[:i], quoteConfig(k[i+1:j]))
		}
		key := k[strings.LastIndexByte(k, '.')+1:]
		if _, ok := sections[header]; !ok {
			order = append(order, header)
		}
		if strings.ContainsAny(v, " \t#;\"\\") {
			v = quoteConfig(v)
		}
		sections[header] = append(sections[header], fmt.Sprintf("\t%s = %s\n", key, v))
	}
	version := "0"
	for _, kv := range r.config {
		if strings.HasPrefix(kv, "extensions.") {
			version = "1" // an extension needs format version 1 (gitrepository-layout(5))
		}
	}
	add("core.repositoryformatversion=" + version)
	add(fmt.Sprintf("core.bare=%t", bare))
	add("core.logallrefupdates=false")
	for _, kv := range r.config {
		add(kv)
	}
	for _, kv := range extra {
		add(kv)
	}
	var b bytes.Buffer
	for _, h := range order {
		b.WriteString(h + "\n")
		for _, line := range sections[h] {
			b.WriteString(line)
		}
	}
	return b.Bytes()
}

// runGitDir is orch's own git directory of a run.
type runGitDir struct {
	path string
	repo *repository
}

// head is the commit orch's git directory says the worktree holds; "" when it cannot be read.
func (d runGitDir) head() string {
	s, ok := readSmall(filepath.Join(d.path, "HEAD"))
	if !ok || !isObjectName(s) {
		return ""
	}
	return s
}

// write makes the git directory anew at head, or rewrites its HEAD and configuration, keeping its index; anything
// else found in it (a commondir, hooks, info/attributes, …: nothing orch makes) goes.
func (d runGitDir) write(head string) error {
	if err := mkdirOwned(d.path, d.repo.owner); err != nil {
		return err
	}
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.Name() {
		case "HEAD", "config": // replaced by a rename below, whatever they are
			continue
		case "refs", "index":
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
		}
		if err := os.RemoveAll(filepath.Join(d.path, e.Name())); err != nil {
			return err
		}
	}
	if err := mkdirOwned(filepath.Join(d.path, "refs"), d.repo.owner); err != nil {
		return err
	}
	if err := writeOwned(filepath.Join(d.path, "config"), d.repo.configText(false), d.repo.owner); err != nil {
		return err
	}
	return writeOwned(filepath.Join(d.path, "HEAD"), []byte(head+"\n"), d.repo.owner)
}

// changed lists what is not as orch wrote it in its git directory: files it never makes (a commondir, hooks, an
// alternates file, …), a configuration or HEAD rewritten. A process that can write the manager's root (the local
// sandbox's agent, which is the user) could have done it.
func (d runGitDir) changed(head string) []string {
	var found []string
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return []string{fmt.Sprintf("orch's git directory of the run %s cannot be read: %v", d.path, err)}
	}
	for _, e := range entries {
		switch e.Name() {
		case "HEAD", "config", "index", "refs":
			if e.Type()&fs.ModeSymlink != 0 {
				found = append(found, fmt.Sprintf("orch's git directory of the run: %s was made a symbolic link", e.Name()))
			}
		case "index.lock":
		default:
			found = append(found, fmt.Sprintf("orch's git directory of the run: %s was added", e.Name()))
		}
	}
	if cfg, _ := os.ReadFile(filepath.Join(d.path, "config")); !bytes.Equal(cfg, d.repo.configText(false)) {
		found = append(found, "orch's git directory of the run: its config was rewritten")
	}
	if head != "" && d.head() != head {
		found = append(found, "orch's git directory of the run: its HEAD was moved")
	}
	return found
}

// agentGit is the agent's own git repository in a worktree: its .git.
type agentGit struct {
	dir    string // the worktree's .git
	repo   *repository
	branch string
	who    Identity
}

// alternates is what the agent's objects/info/alternates holds: the repository's object directories.
func (a agentGit) alternates() []byte {
	return []byte(strings.Join(a.repo.readOnly, "\n") + "\n")
}

// make makes the agent's git anew: on the run's branch at head, with index (the bytes of orch's index for the same
// work tree, so that the agent's `git status` starts clean without reading every file). Whatever was there goes, the
// agent's commits included (they were imported first, or are not the run's).
func (a agentGit) make(head string, index []byte) error {
	if err := os.RemoveAll(a.dir); err != nil { // a symbolic link is removed, not followed
		return fmt.Errorf("removing the agent's git directory: %w", err)
	}
	o := a.repo.owner
	for _, d := range []string{"", "objects", "objects/info", "objects/pack", "refs", "refs/heads", "refs/tags",
		filepath.Dir(filepath.Join("refs/heads", a.branch))} {
		if err := mkdirOwned(filepath.Join(a.dir, d), o); err != nil {
			return err
		}
	}
	files := map[string][]byte{
		"HEAD":                    []byte("ref: refs/heads/" + a.branch + "\n"),
		"config":                  a.repo.configText(false, append(a.repo.remotes, "user.name="+a.who.Name, "user.email="+a.who.Email)...),
		"objects/info/alternates": a.alternates(),
		"refs/heads/" + a.branch:  []byte(head + "\n"),
	}
	if index != nil {
		files["index"] = index
	}
	for name, data := range files {
		if err := writeOwned(filepath.Join(a.dir, name), data, o); err != nil {
			return err
		}
	}
	return nil
}

// quoteConfig quotes a value for a configuration file (git-config(1), "Syntax").
func quoteConfig(v string) string {
	v = strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", " ").Replace(v)
	return "\"" + v + "\""
}

// tampered lists what in the agent's git is not the agent's own business: changes that point git at something
// outside the worktree — the .git replaced by a file (a "gitdir:" link) or a symbolic link, a commondir or gitdir
// file, objects borrowed from another directory, a symbolic link where git keeps its own files. Editing its own
// config, refs, objects or hooks is the agent's business, and is not listed.
func (a agentGit) tampered() []string {
	fi, err := os.Lstat(a.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // removed: the agent's own loss, nothing points anywhere
	case err != nil:
		return []string{fmt.Sprintf("the worktree's .git cannot be read: %v", err)}
	case fi.Mode()&fs.ModeSymlink != 0:
		to, _ := os.Readlink(a.dir)
		return []string{fmt.Sprintf("the worktree's .git was replaced by a symbolic link to %s", oneLine(to))}
	case fi.Mode().IsRegular():
		s, _ := readSmall(a.dir)
		return []string{fmt.Sprintf("the worktree's .git was replaced by a file that points git elsewhere (%s)", oneLine(s))}
	case !fi.IsDir():
		return []string{"the worktree's .git was replaced by something that is not a directory"}
	}
	var found []string
	for _, name := range []string{"commondir", "gitdir"} {
		if _, err := os.Lstat(filepath.Join(a.dir, name)); err == nil {
			s, _ := readSmall(filepath.Join(a.dir, name))
			found = append(found, fmt.Sprintf("the worktree's .git/%s was added, naming %s", name, oneLine(s)))
		}
	}
	for _, name := range []string{"HEAD", "config", "index", "objects", "refs", "packed-refs", "objects/info",
		"objects/pack", "objects/info/alternates"} {
		if fi, err := os.Lstat(filepath.Join(a.dir, name)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(filepath.Join(a.dir, name))
			found = append(found, fmt.Sprintf("the worktree's .git/%s was made a symbolic link to %s", name, oneLine(to)))
		}
	}
	if alt, err := os.ReadFile(filepath.Join(a.dir, "objects", "info", "alternates")); err == nil && !bytes.Equal(alt, a.alternates()) {
		found = append(found, fmt.Sprintf("the worktree's .git borrows objects from elsewhere (objects/info/alternates: %s)",
			oneLine(strings.TrimSpace(string(alt)))))
	}
	return found
}

// oneLine bounds a name the agent chose, for a message.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// head is the commit the agent's git is at: its HEAD, followed through one symbolic ref to a loose or packed ref, all
// read as small files that are not symbolic links. "" when it cannot be told.
func (a agentGit) head() string {
	s, ok := readSmall(filepath.Join(a.dir, "HEAD"))
	if !ok {
		return ""
	}
	if isObjectName(s) {
		return s
	}
	ref, ok := strings.CutPrefix(s, "ref: ")
	if !ok || !validRefName(ref) {
		return ""
	}
	if s, ok := readSmall(filepath.Join(a.dir, filepath.FromSlash(ref))); ok && isObjectName(s) {
		return s
	}
	packed, ok := readBounded(filepath.Join(a.dir, "packed-refs"), 8<<20)
	if !ok {
		return ""
	}
	for _, line := range strings.Split(packed, "\n") {
		if sha, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == ref && isObjectName(sha) {
			return sha
		}
	}
	return ""
}

// validRefName is a ref a HEAD may name: under refs/, with no component that climbs out.
func validRefName(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || len(ref) > 1024 {
		return false
	}
	for _, part := range strings.Split(ref, "/") {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, "\x00\\") {
			return false
		}
	}
	return true
}

// isObjectName reports whether s is a full object name (SHA-1 or SHA-256, lowercase hex).
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// readSmall returns the trimmed content of a regular file of at most 4 KiB that is not a symbolic link: git's
// pointer files are one line, and a FIFO or a huge file put there by the agent must not hang or load orch.
func readSmall(path string) (string, bool) {
	return readBounded(path, 4<<10)
}

func readBounded(path string, max int64) (string, bool) {
	b, ok := readRaw(path, max)
	return strings.TrimSpace(string(b)), ok
}

// readRaw returns the bytes of a regular file of at most max bytes that is not a symbolic link.
func readRaw(path string, max int64) ([]byte, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(b)) > max {
		return nil, false
	}
	return b, true
}

// repoPrint is what of the repository's git directory would make git run a program for its owner or for orch: the
// hooks, the keys of its configuration that name programs (execkeys.go), a commondir. It is taken before the agent
// works and compared after (changedSince): in the local sandbox the agent runs as the repository's owner and could
// write there.
func (r *repository) print() map[string]string {
	p := map[string]string{}
	if entries, err := os.ReadDir(filepath.Join(r.dir, "hooks")); err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".sample") {
				continue
			}
			p["hook "+e.Name()] = fileSum(filepath.Join(r.dir, "hooks", e.Name()))
		}
	}
	for _, name := range []string{"commondir", "config.worktree", "info/attributes"} {
		if _, err := os.Lstat(filepath.Join(r.dir, name)); err == nil {
			p["file "+name] = fileSum(filepath.Join(r.dir, name))
		}
	}
	if data, err := os.ReadFile(filepath.Join(r.dir, "config")); err == nil {
		for _, kv := range configEntries(string(data)) {
			if ExecKey(kv[0]) || strings.HasPrefix(kv[0], "include") {
				p["config "+kv[0]] += kv[1] + "\n"
			}
		}
	}
	return p
}

// changedSince lists what differs between two prints of the repository.
func changedSince(before, after map[string]string) []string {
	var found []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			found = append(found, fmt.Sprintf("the repository's git directory: %s was added", k))
		} else if w != v {
			found = append(found, fmt.Sprintf("the repository's git directory: %s was changed", k))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			found = append(found, fmt.Sprintf("the repository's git directory: %s was removed", k))
		}
	}
	slices.Sort(found)
	return found
}

// fileSum is a short hash of a file's mode, target (a symbolic link) and content.
func fileSum(path string) string {
	h := sha256.New()
	if fi, err := os.Lstat(path); err == nil {
		fmt.Fprintf(h, "%v\n", fi.Mode())
		if fi.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(path)
			h.Write([]byte(to))
		} else if data, ok := readBounded(path, 1<<20); ok {
			h.Write([]byte(data))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// configEntries reads "section.key" and value pairs from a configuration file's text, leniently (a value as written,
// the key lowercased, a subsection kept): enough to tell what keys a file sets, not to interpret them.
func configEntries(text string) [][2]string {
	var out [][2]string
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			inner := strings.TrimSpace(line[1:end])
			if name, sub, ok := strings.Cut(inner, " "); ok {
				section = strings.ToLower(name) + "." + strings.Trim(strings.TrimSpace(sub), `"`)
			} else {
				section = strings.ToLower(inner)
			}
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		k, v, _ := strings.Cut(line, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if section == "" || k == "" {
			continue
		}
		// The subsection keeps its case; the section and the key do not.
		out = append(out, [2]string{section + "." + k, strings.TrimSpace(v)})
	}
	return out
}

// mkdirOwned makes dir (and its missing parents) and gives what it made to the owner of like.
func mkdirOwned(dir, like string) error {
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range made {
		if err := giveTo(d, like); err != nil {
			return err
		}
	}
	return nil
}

// writeOwned writes a file that belongs to the owner of like, replacing whatever was at path (a symbolic link is
// replaced, never followed: the file goes in under a new name and is renamed over it).
func writeOwned(path string, data []byte, like string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".orch-tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := giveTo(tmp.Name(), like); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
