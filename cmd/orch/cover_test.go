package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The tests run orch as users do, in processes of its own, so `go test -cover` alone sees little of this package.
// The orch they run is built with coverage instead: every orch process (the sim agent is orch too) writes its
// counters to one directory, GOCOVERDIR, and at the end TestMain reports this package's coverage from them, merged
// with the in-process tests' counters when the tests run with -cover.
//
// The two programs are not the same: the orch binary instruments the module's packages, the test binary this package
// (or what -coverpkg says) and the test-only packages it links, so their meta-data files differ and `go test -cover`
// counts only its own. This package's meta-data is the same in both, though, and `go tool covdata` merges the counters
// by package, function and block; it needs one counter mode, so orch is built with the mode of the tests.

// cmdPkg is the package whose coverage TestMain reports.
const cmdPkg = "github.com/orchrun/orch/cmd/orch"

// coverage is where the orch processes of a test run write their counters, and where the report goes.
type coverage struct {
	// root holds the report: ORCH_TEST_COVERDIR when set (make test sets it and prints the report), else a
	// temporary directory removed at the end.
	root string
	temp bool
	// cli is the GOCOVERDIR of every orch process: TestMain sets it in its own environment, which the processes the
	// tests start inherit, and the scripts' setup passes it on.
	cli  string
	mode string
}

func newCoverage() (*coverage, error) {
	c := &coverage{root: os.Getenv("ORCH_TEST_COVERDIR"), mode: testing.CoverMode()}
	if c.mode == "" {
		c.mode = "set"
	}
	if c.root == "" {
		dir, err := os.MkdirTemp("", "orch-cover")
		if err != nil {
			return nil, err
		}
		c.root, c.temp = dir, true
	} else if abs, err := filepath.Abs(c.root); err == nil {
		c.root = abs
	}
	c.cli = filepath.Join(c.root, "cli")
	// Counters of an earlier run would count again.
	if err := os.RemoveAll(c.cli); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.cli, 0o755); err != nil {
		return nil, err
	}
	return c, nil
}

// build builds the orch the tests run, instrumenting the module's packages.
func (c *coverage) build(bin string) error {
	build := exec.Command("go", "build", "-cover", "-covermode="+c.mode, "-coverpkg=github.com/orchrun/orch/...", "-o", bin, ".")
	build.Stderr = os.Stderr
	return build.Run()
}

var percentRE = regexp.MustCompile(`coverage: ([0-9.]+%) of statements`)

// report computes this package's statement coverage from what every orch process wrote and, under -cover, from the
// test binary's own counters; it writes the one-line summary and a text profile (go tool cover -html=FILE) into root.
func (c *coverage) report() (string, error) {
	dirs, what := []string{}, "the CLI binary; go test -cover adds the in-process tests"
	if hasFiles(c.cli) {
		dirs = append(dirs, c.cli)
	}
	// The go command passes -test.gocoverdir under -cover; the testing package has written this binary's counters
	// there when m.Run returns.
	if f := flag.Lookup("test.gocoverdir"); testing.CoverMode() != "" && f != nil && hasFiles(f.Value.String()) {
		dirs = append(dirs, f.Value.String())
		what = "the CLI, binary and in-process tests"
	}
	if len(dirs) == 0 {
		return "", nil // no test ran orch (go test -run a few in-process tests)
	}
	in := "-i=" + strings.Join(dirs, ",")
	out, err := exec.Command("go", "tool", "covdata", "percent", in, "-pkg="+cmdPkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool covdata percent: %v\n%s", err, out)
	}
	m := percentRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("go tool covdata percent: no percentage in %q", out)
	}
	profile := filepath.Join(c.root, "cmd-orch.cover")
	if out, err := exec.Command("go", "tool", "covdata", "textfmt", in, "-pkg="+cmdPkg, "-o", profile).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go tool covdata textfmt: %v\n%s", err, out)
	}
	line := fmt.Sprintf("cmd/orch (%s): %s of statements", what, m[1])
	if err := os.WriteFile(filepath.Join(c.root, "cmd-orch.txt"), []byte(line+"\n"), 0o644); err != nil {
		return "", err
	}
	return line, nil
}

func (c *coverage) close() {
	if c.temp {
		os.RemoveAll(c.root)
	}
}

func hasFiles(dir string) bool {
	if dir == "" {
		return false
	}
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) > 0
}
