// Package pipeline reads a plan (a markdown milestone or a DOT pipeline) as a graph of tasks and decides, stage by
// stage, where a run goes next.
package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Kind says how a plan is written, and so how it is run.
type Kind string

const (
	KindMarkdown Kind = "markdown"
	KindDOT      Kind = "dot"
)

// maxPlanSize bounds what Load reads: a plan is hand-written text, and anything
// bigger is a mistake (a log, a build artefact) that would flood the brain.
const maxPlanSize = 10 << 20

// Plan is a loaded plan file.
type Plan struct {
	Path    string // as given
	Kind    Kind
	Content string
	Title   string // the first level-1 heading of a markdown plan, else the file name
}

// PlanError is a problem with the plan the user gave (missing, unreadable, not
// text, no tasks): callers map it to a usage error.
type PlanError struct {
	path string
	err  error
}

func (e *PlanError) Error() string { return "plan " + e.path + ": " + e.err.Error() }

func (e *PlanError) Unwrap() error { return e.err }

// Load reads a plan. A missing or unreadable file, a directory, an empty file,
// a file that is not UTF-8 text (NUL bytes, invalid UTF-8 — e.g. a binary), or
// one larger than 10 MiB is a *PlanError. The kind comes from the extension:
// .dot and .gv are DOT pipelines, everything else is a markdown milestone.
func Load(path string) (*Plan, error) {
	data, err := readPlan(path)
	if err != nil {
		return nil, &PlanError{path: path, err: err}
	}
	p := &Plan{Path: path, Kind: kindOf(path), Content: string(data)}
	if p.Kind == KindMarkdown {
		p.Title = markdownTitle(scanMarkdown(p.Content))
	}
	if p.Title == "" {
		p.Title = filepath.Base(path)
	}
	return p, nil
}

func kindOf(path string) Kind {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".dot", ".gv":
		return KindDOT
	}
	return KindMarkdown
}

func readPlan(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, bareOSError(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, errors.New("is a directory, not a plan file")
	}
	// Reading one byte past the limit tells "exactly 10 MiB" from "more" without
	// trusting Stat, which says nothing useful for pipes and devices.
	data, err := io.ReadAll(io.LimitReader(f, maxPlanSize+1))
	if err != nil {
		return nil, bareOSError(err)
	}
	if len(data) > maxPlanSize {
		return nil, fmt.Errorf("larger than %d MiB", maxPlanSize>>20)
	}
	if err := checkText(data); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("file is empty")
	}
	return data, nil
}

// bareOSError drops the *fs.PathError wrapper, whose message repeats the path
// PlanError already names, while keeping errors.Is(err, fs.ErrNotExist) true.
func bareOSError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func checkText(data []byte) error {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return errors.New("is UTF-16 text; save it as UTF-8")
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("not a text file (NUL byte on line %d)", lineAt(data, i))
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("not UTF-8 text (invalid byte on line %d)", lineAt(data, i))
	}
	return nil
}

func lineAt(data []byte, offset int) int {
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// markdownTitle is the text of the first level-1 heading, or "" when there is none.
func markdownTitle(lines []mdLine) string {
	for _, l := range lines {
		if !l.hidden && l.level == 1 {
			if t := unwrapEmphasis(l.heading); t != "" {
				return t
			}
		}
	}
	return ""
}
