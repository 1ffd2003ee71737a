// Package owned is how orch keeps files in a directory that may be someone else's (the state directory in a user's
// repository) when it runs as root: everything it makes there belongs to the directory's owner, so that the owner
// can go on using orch, and remove what orch made, after a root run; and nothing it does there follows a link out of
// the directory, so that what the owner can put in their own directory cannot lead root to write anywhere else.
package owned

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a directory orch keeps files in, held open while orch uses it. It is an os.Root, so no name used through it
// reaches outside the directory, whatever links are put in it, and renaming the directory or replacing it with a
// link does not move what orch does elsewhere. Every method that makes something (Create, Mkdir, MkdirAll, OpenFile
// with os.O_CREATE, WriteFile, Symlink, CreateTemp) makes it the owner's before it has its name, so that a crash
// never leaves a file of root's behind in someone else's directory.
type Dir struct {
	*os.Root
	path  string
	owner owner
}

// owner is whom a Dir's files are given to; the zero owner gives nothing away (files are orch's own user's).
type owner struct {
	uid, gid int
	set      bool
}

// OpenDir opens the directory path, making it first (with its missing parents) when it does not exist.
//
// When orch runs as root, files made through the Dir belong to the directory's owner, and a directory made belongs
// to the owner of the directory it is made in: whoever may put a directory there is whom it is made for, and is the
// one who can remove it again (for the default state directory, the repository's owner; for one made in a
// directory of root's, root). A path that is a symbolic link someone other than root made is refused: they could
// point it anywhere. When orch does not run as root, nothing is given away, and links are followed as ever.
func OpenDir(path string, perm os.FileMode) (*Dir, error) {
	if err := makeDir(path, perm); err != nil {
		return nil, err
	}
	r, err := openRoot(path)
	if err != nil {
		return nil, err
	}
	fi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	return &Dir{Root: r, path: path, owner: ownerOf(fi)}, nil
}

// Path is name's path, for messages.
func (d *Dir) Path(name string) string { return filepath.Join(d.path, name) }

// Mkdir makes the directory name, the owner's.
func (d *Dir) Mkdir(name string, perm os.FileMode) error { return mkdirIn(d.Root, name, perm, d.owner) }

// MkdirAll makes the directory name and its missing parents, the owner's.
func (d *Dir) MkdirAll(name string, perm os.FileMode) error {
	name = filepath.Clean(name)
	if name == "." {
		return nil
	}
	fi, err := d.Stat(name)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: d.Path(name), Err: errors.New("not a directory")}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := d.MkdirAll(filepath.Dir(name), perm); err != nil {
		return err
	}
	return existingDir(d.Mkdir(name, perm), func() (fs.FileInfo, error) { return d.Stat(name) })
}

// OpenFile is os.Root's. With os.O_CREATE, a file that does not exist yet is made the owner's before it has its
// name: it is written under a temporary name beside name, given away, and linked to name, which never replaces a
// file another process made meanwhile (that one is opened instead). perm is then the mode as given, without umask.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if !d.owner.set || flag&os.O_CREATE == 0 {
		return d.Root.OpenFile(name, flag, perm)
	}
	if flag&os.O_EXCL != 0 {
		f, err := d.Root.OpenFile(name, flag, perm)
		if err == nil {
			// The file is new and nobody else has it open: giving it away at once leaves only a crash in between.
			if err = f.Chown(d.owner.uid, d.owner.gid); err != nil {
				f.Close()
				d.Remove(name)
				return nil, err
			}
		}
		return f, err
	}
	for range 3 {
		f, err := d.Root.OpenFile(name, flag&^os.O_CREATE, perm)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		if err := d.create(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	// Made and removed again by someone else, three times over: let the error say what is there now.
	return d.Root.OpenFile(name, flag&^os.O_CREATE, perm)
}

// create makes name an empty file of the owner's, unless something is there already (fs.ErrExist).
func (d *Dir) create(name string, perm os.FileMode) error {
	tmp, tmpName, err := d.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer d.Remove(tmpName)
	err = tmp.Chmod(perm)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = d.Link(tmpName, name)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// A file system without hard links: the file is made in place and given away at once.
	f, err := d.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	return f.Close()
}

// Create is os.Root's, through OpenFile.
func (d *Dir) Create(name string) (*os.File, error) {
	return d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// WriteFile is os.Root's, through OpenFile.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Symlink is os.Root's, with the link given away at once (a link cannot be made under another name and renamed
// without the same gap).
func (d *Dir) Symlink(oldname, newname string) error {
	if err := d.Root.Symlink(oldname, newname); err != nil || !d.owner.set {
		return err
	}
	return d.Lchown(newname, d.owner.uid, d.owner.gid)
}

// CreateTemp makes a new file in the directory dir of d, named by pattern as os.CreateTemp names it, opened for
// reading and writing with mode 0600 and given away before it is returned, with its name in d. Whoever renames it
// into place puts a file there that is already the owner's.
func (d *Dir) CreateTemp(dir, pattern string) (*os.File, string, error) {
	prefix, suffix, _ := strings.Cut(pattern, "*")
	for {
		name := filepath.Join(dir, fmt.Sprintf("%s%d%s", prefix, rand.Uint32(), suffix))
		f, err := d.Root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if d.owner.set {
			if err := f.Chown(d.owner.uid, d.owner.gid); err != nil {
				f.Close()
				d.Remove(name)
				return nil, "", err
			}
		}
		return f, name, nil
	}
}

// SyncDir makes the creations, renames and removals in the directory name of d durable.
func (d *Dir) SyncDir(name string) error {
	f, err := d.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// makeDir makes path if it does not exist: each missing directory is made in its parent, the parent's owner's.
func makeDir(path string, perm os.FileMode) error {
	if os.Geteuid() != 0 {
		return os.MkdirAll(path, perm)
	}
	fi, err := os.Stat(path)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: path, Err: errors.New("not a directory")}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(path)
	if parent == path {
		return err
	}
	if err := makeDir(parent, perm); err != nil {
		return err
	}
	// The owner is read from the parent held open, and the directory made in that same one: swapping the parent
	// for another meanwhile cannot give a directory in one place to the owner of another.
	p, err := os.OpenRoot(parent)
	if err != nil {
		return err
	}
	defer p.Close()
	pfi, err := p.Stat(".")
	if err != nil {
		return err
	}
	return existingDir(mkdirIn(p, filepath.Base(path), perm, ownerOf(pfi)), func() (fs.FileInfo, error) { return os.Stat(path) })
}

// mkdirIn makes the directory name in r, o's from the moment it has its name: it is made under a temporary name
// beside name, given to o, then renamed into place.
func mkdirIn(r *os.Root, name string, perm os.FileMode, o owner) error {
	if !o.set {
		return r.Mkdir(name, perm)
	}
	var tmp string
	for {
		tmp = filepath.Join(filepath.Dir(name), fmt.Sprintf(".%s.tmp%d", filepath.Base(name), rand.Uint32()))
		err := r.Mkdir(tmp, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	// Given away through the directory opened, not by name: what is at the name could be swapped meanwhile.
	f, err := r.Open(tmp)
	if err == nil {
		err = f.Chown(o.uid, o.gid)
		f.Close()
	}
	if err != nil {
		r.Remove(tmp)
		return err
	}
	// A rename replaces an empty directory another process made meanwhile, which is as good as keeping it; anything
	// else there stays, and the error says so as Mkdir's would.
	if err := r.Rename(tmp, name); err != nil {
		r.Remove(tmp)
		if _, serr := r.Lstat(name); serr == nil {
			return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
		}
		return err
	}
	return nil
}

// existingDir makes an error of Mkdir's for a directory that is there nil, as MkdirAll wants it.
func existingDir(err error, stat func() (fs.FileInfo, error)) error {
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := stat(); serr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// openRoot opens path as an os.Root, refusing, when orch runs as root, a path that is a link someone else made.
func openRoot(path string) (*os.Root, error) {
	if os.Geteuid() != 0 {
		return os.OpenRoot(path)
	}
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := foreignLink(path, before); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	// What was opened is what was looked at: a directory swapped for a link between the two is refused too.
	after, err := os.Lstat(path)
	if err == nil {
		err = foreignLink(path, after)
	}
	if err == nil && after.Mode()&fs.ModeSymlink == 0 {
		var in os.FileInfo
		if in, err = r.Stat("."); err == nil && !os.SameFile(in, after) {
			err = fmt.Errorf("%s changed while orch opened it", path)
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
