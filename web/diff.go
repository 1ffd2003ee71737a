package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// diff.go shows a run's work as its branch's diff against its base: files, hunks, added and removed lines. git's
// text is read as it streams, and only the page's part of it is kept: a page holds a number of files and a number of
// bytes, a file alone a number of bytes, and what is left out is said, with where to find it.

// The bounds of a diff page.
const (
	diffFilesPerPage = 50
	diffPageBytes    = 512 << 10 // of the files' lines on one page: every line is redacted, at some 100 ms a MiB
	diffFileBytes    = 128 << 10 // of one file's lines on a page of many (alone, it gets diffPageBytes)
	diffLineBytes    = 2000      // of one line: a minified file's line is cut
)

// diffLine is one line of a file's diff: Kind is add, del, ctx, hunk (an @@ header) or note ("\ No newline").
type diffLine struct {
	Kind, Text string
}

// diffFile is one file of the diff: its names, what happened to it, its counts, and its lines when the page shows
// them.
type diffFile struct {
	N          int // 1-based, in the diff's order
	Old, New   string
	Status     string // modified, added, deleted, renamed; binary besides
	Binary     bool
	Adds, Dels int
	Lines      []diffLine
	bytes      int
	// Left counts the lines the page leaves out; Full says the page had no room for any (its budget was spent).
	Left int
	Full bool
}

// Name is the file's name as people read it: the new one, or "old → new" for a rename.
func (f *diffFile) Name() string {
	switch {
	case f.Status == "renamed" && f.Old != f.New:
		return f.Old + " → " + f.New
	case f.New == "":
		return f.Old
	}
	return f.New
}

// diffPage reads git's diff text (an io.Writer for runs.Differ) and keeps the files from index from (0-based) to to,
// within the byte bounds; of the others it keeps the count.
type diffPage struct {
	from, to   int
	pageLeft   int // bytes the page may still show
	fileMax    int // bytes a file may show
	Files      []*diffFile
	Total      int
	Adds, Dels int
	cur        *diffFile // the file being read; outside the page, a scratch one
	inHunk     bool
	partial    []byte // a line not yet ended
	cut        bool   // the partial line is over diffLineBytes: the rest of it is dropped
}

func newDiffPage(from, to, fileMax int) *diffPage {
	return &diffPage{from: from, to: to, pageLeft: diffPageBytes, fileMax: fileMax}
}

// Write takes git's text, line by line; a line too long is cut, so that memory stays bounded whatever git writes.
func (d *diffPage) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !d.cut {
			room := diffLineBytes - len(d.partial)
			if len(chunk) > room {
				d.partial = append(d.partial, chunk[:room]...)
				d.cut = true
			} else {
				d.partial = append(d.partial, chunk...)
			}
		}
		if i < 0 {
			break
		}
		d.line(string(d.partial), d.cut)
		d.partial, d.cut = d.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// Close reads a last line without its newline.
func (d *diffPage) Close() {
	if len(d.partial) > 0 {
		d.line(string(d.partial), d.cut)
		d.partial = d.partial[:0]
	}
}

func (d *diffPage) line(l string, cut bool) {
	if strings.HasPrefix(l, "diff --git ") {
		d.startFile(l)
		return
	}
	if d.cur == nil {
		return
	}
	if !d.inHunk {
		d.header(l)
		return
	}
	kind := "ctx"
	switch {
	case strings.HasPrefix(l, "+"):
		kind = "add"
		d.cur.Adds++
		d.Adds++
	case strings.HasPrefix(l, "-"):
		kind = "del"
		d.cur.Dels++
		d.Dels++
	case strings.HasPrefix(l, "@@"):
		kind = "hunk"
	case strings.HasPrefix(l, `\`):
		kind = "note"
	}
	if cut {
		l += " … (line cut)"
	}
	d.keep(diffLine{Kind: kind, Text: l})
}

// startFile begins the next file: "diff --git a/OLD b/NEW".
func (d *diffPage) startFile(l string) {
	d.Total++
	d.inHunk = false
	old, new := gitPaths(strings.TrimPrefix(l, "diff --git "))
	f := &diffFile{N: d.Total, Old: old, New: new, Status: "modified"}
	if d.Total-1 >= d.from && d.Total-1 < d.to {
		d.Files = append(d.Files, f)
		if d.pageLeft <= 0 {
			f.Full = true
		}
	}
	d.cur = f
}

// header reads the lines between a file's "diff --git" and its first hunk.
func (d *diffPage) header(l string) {
	f := d.cur
	switch {
	case strings.HasPrefix(l, "@@"):
		d.inHunk = true
		d.keep(diffLine{Kind: "hunk", Text: l})
	case strings.HasPrefix(l, "new file mode"):
		f.Status = "added"
	case strings.HasPrefix(l, "deleted file mode"):
		f.Status = "deleted"
	case strings.HasPrefix(l, "rename from "):
		f.Status, f.Old = "renamed", strings.TrimPrefix(l, "rename from ")
	case strings.HasPrefix(l, "rename to "):
		f.Status, f.New = "renamed", strings.TrimPrefix(l, "rename to ")
	case strings.HasPrefix(l, "Binary files "), l == "GIT binary patch":
		f.Binary = true
	}
}

// keep adds a line to the current file when it is on the page and there is room; else it is counted as left out.
func (d *diffPage) keep(dl diffLine) {
	f := d.cur
	if f.N-1 < d.from || f.N-1 >= d.to {
		return
	}
	size := len(dl.Text) + 1
	if f.Full || d.pageLeft < size || f.bytes+size > d.fileMax {
		f.Left++
		return
	}
	f.Lines = append(f.Lines, dl)
	f.bytes += size
	d.pageLeft -= size
}

// gitPaths reads "a/OLD b/NEW" (git quotes names with unusual bytes: those are shown as git wrote them).
func gitPaths(s string) (old, new string) {
	if i := strings.LastIndex(s, " b/"); i >= 0 {
		return strings.TrimPrefix(s[:i], "a/"), s[i+3:]
	}
	return s, s
}

// redactLines takes secrets out of a file's shown lines, as every other text of a run the view shows: the lines
// are redacted together, cheaper than one by one, and put back line by line.
func redactLines(f *diffFile) {
	if len(f.Lines) == 0 {
		return
	}
	var b strings.Builder
	for i, l := range f.Lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.Text)
	}
	out := strings.Split(safetext.Redact(b.String()), "\n")
	if len(out) != len(f.Lines) {
		for i := range f.Lines { // a redaction that spanned lines: one by one, then
			f.Lines[i].Text = safetext.Redact(f.Lines[i].Text)
		}
		return
	}
	for i := range f.Lines {
		f.Lines[i].Text = out[i]
	}
}

// diffView is what the diff page shows.
type diffView struct {
	Run           *jobs.Run
	Page          *diffPage
	PageNo, Pages int
	One           int // the file shown alone, 1-based; 0 for a page of files
	// Prev and Next link the pages around this one; Up, for a file alone, its page.
	Prev, Next, Up, Back string
	Empty                string // why there is nothing to show
	PageKiB, FileKiB     int
	// First and Last are the numbers of the page's files; Others how many files the other pages hold.
	First, Last, Others int
}

// handleDiff shows a page of the run's diff (?page=N, from 0), or one file of it alone (?file=N, from 1).
func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request, p person) {
	run, ok := s.runOf(w, r, p)
	if !ok {
		return
	}
	switch {
	case s.cfg.Diffs == nil:
		s.message(w, r, p, http.StatusNotFound, "No diffs here", "This view cannot read the runs' repositories, so it shows no diff.")
		return
	case run.Git == nil:
		s.message(w, r, p, http.StatusNotFound, "No diff", fmt.Sprintf("Run %s works in a plain directory, not on a branch: it has no diff.", run.ID))
		return
	}
	v := diffView{Run: run, PageKiB: diffPageBytes >> 10, FileKiB: diffFileBytes >> 10,
		Back: "/runs/" + url.PathEscape(run.ID) + "/diff"}
	q := r.URL.Query()
	v.PageNo, _ = strconv.Atoi(q.Get("page"))
	v.PageNo = max(v.PageNo, 0)
	v.One, _ = strconv.Atoi(q.Get("file"))
	from, to, fileMax := v.PageNo*diffFilesPerPage, (v.PageNo+1)*diffFilesPerPage, diffFileBytes
	if v.One > 0 {
		from, to, fileMax = v.One-1, v.One, diffPageBytes
	}
	v.Page = newDiffPage(from, to, fileMax)
	if run.Git.BaseCommit == "" {
		v.Empty = "Nothing on the branch yet: the run has not started its work."
		s.render(w, r, http.StatusOK, "diff", map[string]any{"Person": p, "D": v})
		return
	}
	if err := s.cfg.Diffs.Diff(r.Context(), run.Git, false, v.Page); err != nil {
		s.cfg.Log.Error("web: reading a diff", "run", run.ID, "err", err)
		s.message(w, r, p, http.StatusServiceUnavailable, "The diff could not be read",
			fmt.Sprintf("git could not show run %s's branch against its base here (it is in orch's log).", run.ID))
		return
	}
	v.Page.Close()
	for _, f := range v.Page.Files {
		redactLines(f)
	}
	s.pageDiff(&v)
	s.render(w, r, http.StatusOK, "diff", map[string]any{"Person": p, "D": v})
}

// pageDiff sets the links between the diff's pages, and what an empty one says.
func (s *Server) pageDiff(v *diffView) {
	total := v.Page.Total
	v.Pages = max(1, (total+diffFilesPerPage-1)/diffFilesPerPage)
	link := func(page int) string {
		if page == 0 {
			return v.Back
		}
		return v.Back + "?page=" + strconv.Itoa(page)
	}
	switch {
	case total == 0:
		v.Empty = "The branch holds no change against its base."
	case v.One > 0 && len(v.Page.Files) == 0:
		v.Empty = fmt.Sprintf("The diff has %s; there is no file %d.", jobs.Count(total, "file"), v.One)
	case v.One == 0 && len(v.Page.Files) == 0:
		v.Empty = fmt.Sprintf("The diff has %s: page %d is past its end.", jobs.Count(total, "file"), v.PageNo+1)
	}
	if n := len(v.Page.Files); n > 0 {
		v.First, v.Last, v.Others = v.Page.Files[0].N, v.Page.Files[n-1].N, total-n
	}
	if v.One > 0 {
		v.Up = link((v.One - 1) / diffFilesPerPage)
		return
	}
	if v.PageNo > 0 {
		v.Prev = link(v.PageNo - 1)
	}
	if v.PageNo+1 < v.Pages {
		v.Next = link(v.PageNo + 1)
	}
}
