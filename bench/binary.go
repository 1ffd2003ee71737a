package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// binaryResult is what orch's binary costs to have and to start, each beside its anchor measured in the same run.
type binaryResult struct {
	orchBytes, shimBytes, hookBytes int64
	helpMs, helloMs                 float64 // `orch help` and a static Go hello, medians
	buildOrchS, buildAsynqS         float64 // cold builds (empty build cache) of cmd/orch and bench/asynqmin; 0 when not made
	note                            string
}

// measureBinary sizes the binaries the rig built, times `orch help` against a static Go program that does nothing
// (n starts each, interleaved), and with cold set builds cmd/orch and the minimal asynq program each from an empty
// build cache, in turn, with the module cache as it is (downloads are not the build's cost).
func measureBinary(ctx context.Context, r *rig, n int, cold bool) (binaryResult, error) {
	var res binaryResult
	for _, b := range []struct {
		size *int64
		name string
	}{{&res.orchBytes, "orch"}, {&res.shimBytes, "orch-shim"}, {&res.hookBytes, "orch-hook"}} {
		fi, err := os.Stat(filepath.Join(filepath.Dir(r.orchBin), b.name))
		if err != nil {
			return res, err
		}
		*b.size = fi.Size()
	}
	hello, err := buildHello(ctx, r.tmp)
	if err != nil {
		return res, err
	}
	var helpTimes, helloTimes []time.Duration
	for range n {
		for _, w := range []struct {
			args  []string
			times *[]time.Duration
		}{{[]string{r.orchBin, "help"}, &helpTimes}, {[]string{hello}, &helloTimes}} {
			cmd := exec.CommandContext(ctx, w.args[0], w.args[1:]...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return res, fmt.Errorf("%v: %v\n%s", w.args, err, out)
			}
			*w.times = append(*w.times, time.Since(start))
		}
	}
	res.helpMs, res.helloMs = percentileMs(helpTimes, 0.5), percentileMs(helloTimes, 0.5)
	res.note = fmt.Sprintf("orch %.1f MB, orch-shim %.1f MB, orch-hook %.1f MB (go build -trimpath, CGO_ENABLED=0, as "+
		"`make build`). `orch help` against a static Go program that does nothing, %d starts each, interleaved, "+
		"medians: %.2f and %.2f ms (%.1f×).", mb(res.orchBytes), mb(res.shimBytes), mb(res.hookBytes), n,
		res.helpMs, res.helloMs, res.helpMs/res.helloMs)
	if !cold {
		return res, nil
	}
	for _, b := range []struct {
		secs *float64
		pkg  string
	}{{&res.buildAsynqS, "./bench/asynqmin"}, {&res.buildOrchS, "./cmd/orch"}} {
		took, err := coldBuild(ctx, r.tmp, b.pkg)
		if err != nil {
			return res, err
		}
		*b.secs = took.Seconds()
	}
	res.note += fmt.Sprintf(" Cold builds, one after the other, each with an empty GOCACHE and the module cache "+
		"already filled: cmd/orch %.1f s, a minimal asynq program (bench/asynqmin: a client and a server) %.1f s (%.2f×).",
		res.buildOrchS, res.buildAsynqS, res.buildOrchS/res.buildAsynqS)
	return res, nil
}

// buildHello builds a Go program that does nothing, statically, into dir.
func buildHello(ctx context.Context, dir string) (string, error) {
	src := filepath.Join(dir, "hello")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(src, "hello")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir, cmd.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building a static hello: %v\n%s", err, out)
	}
	return bin, nil
}

// coldBuild builds pkg of this module with a build cache of its own, empty, and returns how long it took.
func coldBuild(ctx context.Context, dir, pkg string) (time.Duration, error) {
	cache, err := os.MkdirTemp(dir, "gocache-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(cache)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(cache, "out"), pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOCACHE="+cache, "GOFLAGS=-mod=readonly")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cold build of %s (run from the repository root): %v\n%s", pkg, err, out)
	}
	return time.Since(start), nil
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
