package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killRunProcesses kills every process of this user whose environment says it belongs to run runID (ORCH_RUN_ID,
// which every agent gets and its children inherit), and returns how many it killed. It is how the processes of an
// agent whose orch died (SIGKILL: nothing of orch ran to stop them) are found: their process group's leader went with
// orch, the rest did not.
func killRunProcesses(runID string) int {
	if runID == "" {
		return 0
	}
	return killMarked("ORCH_RUN_ID=" + runID)
}

// runProcesses lists the processes of this user whose environment has ORCH_RUN_ID=runID (never orch itself).
func runProcesses(runID string) []int {
	if runID == "" {
		return nil
	}
	return markedProcesses("ORCH_RUN_ID=" + runID)
}

// killMarked kills the processes whose environment holds mark (KEY=VALUE), and those they fork meanwhile, and returns
// how many it killed.
func killMarked(mark string) int {
	killed := map[int]bool{}
	// A process that forks while it is killed may leave a child this pass missed; the next pass finds it. A killed
	// process is no longer found once it has exited (a zombie has no environment left).
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		pids := markedProcesses(mark)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
	}
	return len(killed)
}

// markedProcesses lists the processes of this user whose environment holds mark (never orch itself).
func markedProcesses(mark string) []int {
	marker := []byte("\x00" + mark + "\x00")
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
			continue // another user's process, one gone meanwhile, or not marked
		}
		pids = append(pids, pid)
	}
	return pids
}
