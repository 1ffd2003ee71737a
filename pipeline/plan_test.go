package pipeline

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		path    string
		wantErr string
		is      error
	}{
		{name: "missing", path: filepath.Join(dir, "nope.md"), wantErr: "no such file", is: fs.ErrNotExist},
		{name: "directory", path: dir, wantErr: "is a directory"},
		{name: "empty", path: writeFile(t, "empty.md", nil), wantErr: "file is empty"},
		{name: "blank", path: writeFile(t, "blank.md", []byte("\ufeff \r\n\t\n")), wantErr: "file is empty"},
		{name: "NUL bytes", path: writeFile(t, "plan.md", []byte("# Plan\n\x7fELF\x00\x01")), wantErr: "not a text file (NUL byte on line 2)"},
		{name: "invalid UTF-8", path: writeFile(t, "latin1.md", []byte("# Plan\n\n## Task 1: caf\xe9\n")), wantErr: "not UTF-8 text (invalid byte on line 3)"},
		{name: "UTF-16", path: writeFile(t, "utf16.md", []byte("\xff\xfe#\x00 \x00")), wantErr: "UTF-16"},
		{name: "oversized", path: writeFile(t, "big.md", bytes.Repeat([]byte("x"), maxPlanSize+1)), wantErr: "larger than 10 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Load(tt.path)
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, %v; want *PlanError", p, err)
			}
			if pe.path != tt.path {
				t.Errorf("Path = %q, want %q", pe.path, tt.path)
			}
			if want := "plan " + tt.path + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want %q…%q", err, want, tt.wantErr)
			}
			if strings.Count(err.Error(), tt.path) != 1 {
				t.Errorf("error %q repeats the path", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	path := writeFile(t, "secret.md", []byte("## Task 1: A\n"))
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var pe *PlanError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("got %v, want *PlanError for permission denied", err)
	}
}

func TestLoadAtSizeLimit(t *testing.T) {
	data := bytes.Repeat([]byte("x\n"), maxPlanSize/2)
	p, err := Load(writeFile(t, "limit.md", data))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Content) != maxPlanSize {
		t.Errorf("content is %d bytes, want %d", len(p.Content), maxPlanSize)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		data      string
		wantKind  Kind
		wantTitle string
	}{
		{"markdown title", "m4.md", "intro\n\n# Milestone 4: Escalation\n\n## Task 4.1: A\n", KindMarkdown, "Milestone 4: Escalation"},
		{"title emphasis and closing hashes", "t.md", "# **Bold Plan** #\n", KindMarkdown, "Bold Plan"},
		{"heading in a fence is not the title", "f.md", "```\n# Not This\n```\n## Task 1: A\n# Real\n", KindMarkdown, "Real"},
		{"no level-1 heading", "plan.md", "## Task 1: A\n", KindMarkdown, "plan.md"},
		{"no extension is markdown", "PLAN", "# P\n", KindMarkdown, "P"},
		{"dot", "flow.dot", "digraph flow { start -> done }\n", KindDOT, "flow.dot"},
		{"gv", "flow.gv", "# not a title\ndigraph g {}\n", KindDOT, "flow.gv"},
		{"extension case", "FLOW.DOT", "digraph g {}\n", KindDOT, "FLOW.DOT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file, []byte(tt.data))
			p, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if p.Path != path || p.Kind != tt.wantKind || p.Title != tt.wantTitle || p.Content != tt.data {
				t.Errorf("got %+v, want kind %q title %q", p, tt.wantKind, tt.wantTitle)
			}
		})
	}
}

func TestLoadSeed(t *testing.T) {
	p, err := Load(filepath.Join("testdata", "m4-escalation-loop-detection.md"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "Milestone 4: Escalation + Loop Detection" {
		t.Errorf("Title = %q", p.Title)
	}
	tasks, err := p.Tasks()
	if err != nil || len(tasks) != 11 {
		t.Fatalf("Tasks() = %d tasks, %v", len(tasks), err)
	}
}

func TestLoadStripsBOM(t *testing.T) {
	p, err := Load(writeFile(t, "bom.md", []byte("\ufeff# Title\r\n## Task 1: A\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	if p.Content != "# Title\r\n## Task 1: A\r\n" || p.Title != "Title" {
		t.Errorf("got %+v", p)
	}
}

func TestPlanTasksErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		data    string
		wantErr string
		is      error
	}{
		{"no tasks", "notes.md", "# Notes\n\nnothing here\n", `no tasks found (expected headings like "## Task 1.1: Title")`, ErrNoTasks},
		{"duplicate ids", "dup.md", "## Task 1: A\n\n## Task 1: B\n", `duplicate task id "1" on lines 1 and 3`, nil},
		{"dot pipeline", "flow.dot", "digraph g {}\n", "a dot plan has no markdown tasks", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file, []byte(tt.data))
			p, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := p.Tasks()
			var pe *PlanError
			if !errors.As(err, &pe) || pe.path != path {
				t.Fatalf("got %v, %v; want *PlanError for %s", tasks, err, path)
			}
			if want := "plan " + path + ": " + tt.wantErr; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}
