// Package initbudget holds a test of what orch's own packages cost at program start.
//
// Every orch process runs the package initialisation of the whole binary before main: the sandbox's shim in front
// of each agent and Claude Code's hook for each tool call included. What a package computes there (a regular
// expression compiled, a template parsed, a table built) is paid by all of them, used or not. The test reads the
// runtime's own account of it (GODEBUG=inittrace=1) from the built orch binary and holds each orch package to a
// budget of bytes allocated, which, unlike time, does not depend on how loaded the machine is.
package initbudget

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// budget is what one orch package may allocate at init. A regular expression with a counted repetition costs more
// than this on its own (`^[0-9a-f]{7,64}$` is 44 KB, `[a-zA-Z0-9_.-]{0,127}` 118 KB): declare it with
// internal/lazyre, compiled on first use.
const budget = 64 << 10

// over are the packages known to spend more, each with its ceiling until it is brought under budget; an entry
// must not grow, and goes once its package fits.
var over = map[string]int{
	// prompts.go: the prompt templates parsed at init (template.Must) — ~130 KB.
	"github.com/orchrun/orch/brain": 160 << 10,
	// cmd/orch's package-level regexps: sandboxes.go's instancePattern ({0,62}: 59 KB) and userPattern (18 KB),
	// secrets.go's credentialName, agentenv.go's envNamePattern; metrics.go's prometheus descriptors — ~90 KB.
	"main": 112 << 10,
}

// total is what all of orch's packages together may allocate at init.
const total = 512 << 10

// initLine is one package's line of GODEBUG=inittrace=1: "init PKG @T ms, T ms clock, N bytes, N allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

func TestInitBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds orch")
	}
	bin := filepath.Join(t.TempDir(), "orch")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/orchrun/orch/cmd/orch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The shim's command without its arguments: orch initialises, then the shim refuses and nothing else starts
	// (a started program would inherit GODEBUG and add its own trace).
	cmd := exec.Command(bin, "sandbox-shim")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run() // a usage error is expected; the trace is written before main

	sum, seen := 0, 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		pkg := m[1]
		if pkg != "main" && pkg != "github.com/orchrun/orch" && !strings.HasPrefix(pkg, "github.com/orchrun/orch/") {
			continue
		}
		seen++
		bytes, _ := strconv.Atoi(m[2])
		sum += bytes
		limit, known := over[pkg]
		if !known {
			limit = budget
		}
		switch {
		case bytes > limit:
			t.Errorf("%s allocates %d bytes (%s allocs) at init, more than its %d: compile regular expressions, "+
				"templates and tables on first use (internal/lazyre, sync.OnceValue)", pkg, bytes, m[3], limit)
		case known && bytes <= budget:
			t.Logf("%s allocates %d bytes at init, within the %d budget: take it out of over", pkg, bytes, budget)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of orch's packages in orch's stderr:\n%s", stderr.String())
	}
	if sum > total {
		t.Errorf("orch's packages allocate %d bytes at init together, more than %d", sum, total)
	}
	t.Logf("orch's %d packages with init work allocate %d bytes at init", seen, sum)
}
