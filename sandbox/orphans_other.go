//go:build !linux

package sandbox

// killRunProcesses finds nothing where there is no /proc: an agent whose orch died keeps running there until it ends.
func killRunProcesses(runID string) int { return 0 }

// killMarked finds nothing where there is no /proc: the shim kills the agent's process group alone.
func killMarked(mark string) int { return 0 }
