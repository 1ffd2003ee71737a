package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// killRunProcesses kills every process of this user whose environment says it belongs to run runID (ORCH_RUN_ID,
// which every agent gets and its children inherit), and returns how many it killed. It is how the processes of an
// agent whose orch died (SIGKILL: nothing of orch ran to stop them) are found: their process group's leader went with
// orch, the rest did not.
func killRunProcesses(runID string) int {
	n := 0
	for _, pid := range runProcesses(runID) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// runProcesses lists the processes of this user whose environment has ORCH_RUN_ID=runID (never orch itself).
func runProcesses(runID string) []int {
	if runID == "" {
		return nil
	}
	marker := []byte("\x00ORCH_RUN_ID=" + runID + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), marker) {
			continue // another user's process, one gone meanwhile, or not the run's
		}
		pids = append(pids, pid)
	}
	return pids
}
