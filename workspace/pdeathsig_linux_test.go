package workspace

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchrun/orch/sandbox/shim"
)

// envGitHelper makes the test binary a process that runs one git command, which never ends by itself, as orch runs
// every git command (gitCmd.run), and prints "started" once git runs.
const envGitHelper = "ORCH_WORKSPACE_TEST_GIT_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envGitHelper); dir != "" {
		// git cat-file --batch reads names from its stdin until it ends: this process's stdin, which the test keeps open.
		c := gitCmd{gitDir: dir, stdin: os.Stdin}
		go func() {
			for {
				if len(childrenOf(os.Getpid(), "git")) > 0 {
					os.Stdout.WriteString("started\n")
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		_, err := c.run(context.Background(), "cat-file", "--batch")
		os.Stderr.WriteString("git ended: " + errString(err) + "\n")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// childrenOf lists the processes whose parent is pid and whose name is comm.
func childrenOf(pid int, comm string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		if err != nil || i < 0 || !strings.HasPrefix(string(stat), e.Name()+" ("+comm+")") {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// A git command dies with the orch that started it, SIGKILL included: it does not go on writing in a run's git
// directory, or pushing, once nobody waits for it.
func TestGitDiesWithOrch(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "repo.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), envGitHelper+"="+dir)
	// A pipe of the test's own, not StdinPipe, which Wait would close: its write end stays open until the end, and git
	// would read it for ever.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	helper.Stdin = r
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer helper.Wait()
	defer helper.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		t.Fatalf("the helper's git did not start: %q, %v", line, err)
	}
	gits := childrenOf(helper.Process.Pid, "git")
	if len(gits) != 1 {
		t.Fatalf("git processes below the helper: %v", gits)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	for deadline := time.Now().Add(30 * time.Second); shim.Running(gits[0]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(gits[0], syscall.SIGKILL)
			t.Fatal("git still runs 30 s after the orch that started it was killed")
		}
	}
}
