package shim

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// descendants lists the live processes below root in the process tree (its children, theirs, and so on), read from
// /proc. Zombies are left out: they have ended, hold nothing and have no children (an exiting process's children are
// handed on before it becomes a zombie).
func descendants(root int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1) // unsorted: the order does not matter, the sort would cost
	d.Close()
	children := map[int][]int{}
	var buf [256]byte // the start of a stat line: enough for the pid, a 16-byte name, the state and the parent
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, live := parentOf(name, buf[:]); live {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	seen := map[int]bool{root: true} // the files were read at different moments: never follow a loop
	for queue := children[root]; len(queue) > 0; queue = queue[1:] {
		if pid := queue[0]; !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
			queue = append(queue, children[pid]...)
		}
	}
	return out
}

// parentOf reads the parent of process pid from /proc/<pid>/stat into buf, and whether the process still runs (it
// is not a zombie, and has not gone meanwhile). It reads with bare system calls: it runs for every process on the
// host, and the shim does it after every agent that left something behind.
func parentOf(pid string, buf []byte) (ppid int, live bool) {
	fd, err := syscall.Open("/proc/"+pid+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return 0, false
	}
	b := buf[:n]
	// "pid (comm) state ppid ...": comm is the program's name, which may hold spaces and parentheses; the last ')'
	// ends it (a name is at most 16 bytes, well within buf).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, err == nil
}

// killDescendants kills every process below the calling process with SIGKILL, and does it again until none is left:
// a process may fork while it is being killed (its child appears after the look that found the parent), and a
// killed process's children are handed to the nearest subreaper up the tree (the shim) and found by the next look.
// reap collects the caller's children that have ended and says whether it has any left: none means nothing is below
// it (every descendant's line up the tree passes through one of its children), and no look in /proc is needed,
// which is the common case of an agent that left nothing. It gives up after wait, when a process does not die (one
// stuck in the kernel, in uninterruptible sleep), and returns how many it killed and how many were left.
func killDescendants(reap func() (children bool), wait time.Duration) (killed, left int) {
	self := os.Getpid()
	seen := map[int]bool{}
	deadline := time.Now().Add(wait)
	for {
		if !reap() {
			return len(seen), 0
		}
		pids := descendants(self)
		if time.Now().After(deadline) {
			return len(seen), len(pids)
		}
		if len(pids) == 0 {
			time.Sleep(time.Millisecond) // children that ended since reap, not collected yet
			continue
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				seen[pid] = true
			}
		}
		time.Sleep(time.Millisecond) // SIGKILL is delivered at once, but the process takes a moment to exit
	}
}

// signalDescendants sends sig to every process below the calling process, once.
func signalDescendants(sig syscall.Signal) {
	for _, pid := range descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// Running reports whether process pid runs: it exists, and has not ended as a zombie waiting to be collected.
func Running(pid int) bool {
	_, live := parentOf(strconv.Itoa(pid), make([]byte, 256))
	return live
}
