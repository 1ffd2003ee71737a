package sandbox

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// The processes an agent left behind are found by the run id in their environment, and only those.
func TestKillRunProcesses(t *testing.T) {
	start := func(run string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "sleep 60; :")
		cmd.Env = append(os.Environ(), "ORCH_RUN_ID="+run)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { killRunProcesses(run); cmd.Wait() })
		return cmd
	}
	mine, other, prefix := start("r-orphanstest"), start("r-otherrun00"), start("r-orphanstest2")
	for deadline := time.Now().Add(5 * time.Second); len(runProcesses("r-orphanstest")) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("sh did not start its sleep")
		}
	}
	if n := killRunProcesses("r-orphanstest"); n < 2 { // sh and its sleep
		t.Fatalf("killed %d processes, want the agent's sh and its sleep", n)
	}
	done := make(chan error, 1)
	go func() { done <- mine.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the run's process is still running")
	}
	// The other runs' processes are alive still (a killed one would be a zombie with no environment left to match).
	for _, run := range []string{"r-otherrun00", "r-orphanstest2"} {
		if len(runProcesses(run)) < 1 {
			t.Fatalf("run %s's process was killed too", run)
		}
	}
	_, _ = other, prefix
}
