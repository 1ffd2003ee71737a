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
	if runID == "" {
		return 0
	}
	marker := []byte("ORCH_RUN_ID=" + runID + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, marker...)) {
			continue // another user's process, one gone meanwhile, or not the run's
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
