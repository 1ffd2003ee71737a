package localredis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests that need real processes run this test binary again as a child, with childEnv set to the child's part:
//
//	writer: opens the store in childDir and writes keys childPrefix:0, :1, … with values of childSize bytes, calling
//	        Sync after each and printing "ack KEY" once it returned nil; until stdin ends.
//	serve:  opens the store and waits until stdin ends.
//
// With childCompact set, a child that serves the store compacts it whenever the journal outgrows the snapshot.
//
// Both print "open owner=BOOL" first, "owner" when they take over serving, and "closed OK" or "closed ERROR" last.
const (
	childEnv     = "ORCH_EMBEDDED_TEST_CHILD"
	childDir     = "ORCH_EMBEDDED_TEST_DIR"
	childPrefix  = "ORCH_EMBEDDED_TEST_PREFIX"
	childSize    = "ORCH_EMBEDDED_TEST_SIZE"
	childCompact = "ORCH_EMBEDDED_TEST_COMPACT"
)

// valueOf is the value the writer stores under key.
func valueOf(key string, size int) string {
	return strings.Repeat(key+";", size/(len(key)+1)+1)[:size]
}

func runChild(mode string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	e, err := Open(os.Getenv(childDir), log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	owner := e.Owner()
	if owner && os.Getenv(childCompact) != "" {
		setCompactMin(e, 0)
	}
	fmt.Printf("open owner=%v\n", owner)
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	noteOwner := func() {
		if !owner && e.Owner() {
			owner = true
			fmt.Println("owner")
		}
	}
	switch mode {
	case "serve":
		<-stop
	case "writer":
		ctx := context.Background()
		c := redis.NewClient(&redis.Options{Dialer: e.Dial, DialerRetries: HandoverDialRetries, DialerRetryTimeout: HandoverDialBackoff})
		size, _ := strconv.Atoi(os.Getenv(childSize))
		prefix := os.Getenv(childPrefix)
		for i := 0; !stopped(); i++ {
			key := fmt.Sprintf("%s:%d", prefix, i)
			for !stopped() {
				if err := c.Set(ctx, key, valueOf(key, size), 0).Err(); err != nil {
					log.Warn("writing", "key", key, "err", err)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if err := e.Sync(ctx); err != nil {
					log.Warn("syncing; writing again", "key", key, "err", err)
					continue
				}
				fmt.Println("ack", key)
				break
			}
			noteOwner()
		}
		c.Close()
	}
	if err := e.Close(); err != nil {
		fmt.Println("closed ERROR", err)
		return 1
	}
	fmt.Println("closed OK")
	return 0
}

// child is a child process of the test.
type child struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	exited chan struct{}

	mu     sync.Mutex
	acks   []string
	lines  []string
	owner  bool // serves the store now, as far as its output says
	closed string
}

func startChild(t *testing.T, mode, dir, prefix string, size int, env ...string) *child {
	t.Helper()
	c := &child{t: t, name: prefix, exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childEnv+"="+mode, childDir+"="+dir, childPrefix+"="+prefix, childSize+"="+strconv.Itoa(size))
	c.cmd.Env = append(c.cmd.Env, env...)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.lines = append(c.lines, line)
			switch {
			case strings.HasPrefix(line, "ack "):
				c.acks = append(c.acks, strings.TrimPrefix(line, "ack "))
			case line == "open owner=true", line == "owner":
				c.owner = true
			case strings.HasPrefix(line, "closed "):
				c.closed = strings.TrimPrefix(line, "closed ")
			}
			c.mu.Unlock()
		}
		c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			t.Logf("child %s output:\n%s\nstderr:\n%s", c.name, strings.Join(c.lines, "\n"), c.stderr.String())
		}
	})
	return c
}

func (c *child) state() (acks int, owner bool, lines []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acks), c.owner, append([]string(nil), c.lines...)
}

// waitAcks waits until the child has acknowledged n keys in all.
func (c *child) waitAcks(n int) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("child %s to acknowledge %d keys", c.name, n), func() bool {
		got, _, _ := c.state()
		return got >= n
	})
}

// waitLine waits until the child has printed line.
func (c *child) waitLine(line string) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("child %s to print %q", c.name, line), func() bool {
		_, _, lines := c.state()
		for _, l := range lines {
			if l == line {
				return true
			}
		}
		return false
	})
}

// stop ends the child's stdin and waits for it to close the store and exit.
func (c *child) stop() {
	c.t.Helper()
	c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(time.Minute):
		c.t.Fatalf("child %s did not exit", c.name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed != "OK" {
		c.t.Fatalf("child %s closed the store with %q", c.name, c.closed)
	}
	c.owner = false
}

func (c *child) kill() {
	c.t.Helper()
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
	c.mu.Lock()
	c.owner = false
	c.mu.Unlock()
}

func (c *child) acked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.acks...)
}

// waitFor polls cond; the timeout only stops a test that would otherwise hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkAcked opens dir and checks that every acknowledged key holds its value.
func checkAcked(t *testing.T, dir string, size int, keys []string) {
	t.Helper()
	e, logs := open(t, dir)
	defer e.Close()
	if w := e.Warnings(); len(w) != 0 {
		t.Fatalf("warnings: %q\nlog: %s", w, logs)
	}
	c := clientOf(t, e)
	ctx := context.Background()
	missing := 0
	for _, k := range keys {
		v, err := c.Get(ctx, k).Result()
		if err != nil || v != valueOf(k, size) {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged key %s: %v (%d bytes)", k, err, len(v))
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged keys lost", missing, len(keys))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
