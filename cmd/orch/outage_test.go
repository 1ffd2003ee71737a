package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/internal/repeatlog"
)

// outageLength is how long the outage tests keep Redis away: long enough for the queue library's loops to fail a
// dozen times over (several a second), short of the log's summary window, whose summaries are counted apart.
const outageLength = 5 * time.Second

// Redis killed while `orch run` waits for its human: the terminal says once what orch waits for and once that Redis
// is back, and nothing else, however often the libraries under it fail meanwhile.
func TestOutageIsOneLineOnTheTerminal(t *testing.T) {
	t.Parallel()
	rs := startOwnRedis(t)
	dir := workdir(t)
	cmd := exec.Command(orchBin, "run", "--agent", "sim", "--redis", rs.url(), "examples/plans/ambiguous_task.md")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=", "ORCH_AGENT=", "ORCH_BRAIN=heuristic", "ORCH_SANDBOX=",
		"ORCH_LOG_LEVEL=", "ORCH_LOG_FORMAT=")
	stdin, _ := cmd.StdinPipe()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitOutput(t, out, "Your response")
	time.Sleep(1500 * time.Millisecond) // appendfsync everysec: the question is on disk
	before := len(out.String())
	rs.kill()
	waitOutput(t, out, "does not answer")
	time.Sleep(outageLength)
	rs.start()
	waitOutput(t, out, "is back after")
	time.Sleep(2 * time.Second) // what the libraries would still say of the outage once it is over
	during := out.String()[before:]
	n := strings.Count(during, "\n")
	t.Logf("%d lines for an outage of %s:\n%s", n, outageLength, during)
	addr := strings.TrimSuffix(strings.TrimPrefix(rs.url(), "redis://"), "/0")
	if n > 3 {
		t.Fatalf("%d lines for an outage of %s, want at most 3 (what orch waits for, that it is back):\n%s", n,
			outageLength, during)
	}
	if !strings.Contains(during, "Redis at "+addr+" does not answer (connection refused); waiting for it (up to 2m)…") ||
		!strings.Contains(during, "Redis at "+addr+" is back after") {
		t.Fatalf("the outage is not told as what orch waits for:\n%s", during)
	}
	answerAndComplete(t, stdin, cmd, out, "B")
}

// Redis killed under `orch worker`: its JSON log says each kind of failure once, not once per try of each of the
// queue library's loops, and says how many repeats there were when the window ends.
func TestOutageIsSummarizedInTheServiceLog(t *testing.T) {
	t.Parallel()
	rs := startOwnRedis(t)
	dir := workdir(t)
	w, out := startOrch(t, dir, []string{"ORCH_REDIS_URL=" + rs.url(), "ORCH_SANDBOX=local", "ORCH_HTTP_ADDR=127.0.0.1:0",
		"ORCH_POLL_INTERVAL=100ms", "ORCH_LOG_LEVEL=", "ORCH_LOG_FORMAT="}, "worker")
	waitOutput(t, out, "worker running")
	before := len(out.String())
	rs.kill()
	time.Sleep(outageLength)
	rs.start()
	time.Sleep(2 * time.Second)
	during := out.String()[before:]
	// SIGTERM: the worker flushes the repeats it counted on its way out.
	w.Process.Signal(syscall.SIGTERM)
	w.Wait()
	all := out.String()[before:]
	seen := map[string]int{}
	repeats := 0
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(during), "\n") {
		var rec struct {
			Level   string `json:"level"`
			Msg     string `json:"msg"`
			Repeats int    `json:"repeats"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not a JSON log line: %q", l)
		}
		if rec.Level == "ERROR" || rec.Level == "WARN" {
			lines = append(lines, l)
			seen[repeatlog.Normalize(rec.Msg)]++
		}
	}
	for _, l := range strings.Split(all, "\n") {
		var rec struct {
			Repeats int `json:"repeats"`
		}
		json.Unmarshal([]byte(l), &rec)
		repeats += rec.Repeats
	}
	t.Logf("%d warning and error lines for an outage of %s, %d repeats summarized at exit", len(lines), outageLength, repeats)
	if len(lines) == 0 {
		t.Fatalf("the outage was not logged:\n%s", all)
	}
	for msg, n := range seen {
		if n > 1 {
			t.Fatalf("%q logged %d times in an outage shorter than the window:\n%s", msg, n, strings.Join(lines, "\n"))
		}
	}
	if repeats == 0 {
		t.Fatalf("no summary of the repeats when the worker stopped:\n%s", all)
	}
}

// What counts as Redis not answering: what the network says, and a Redis still loading; a reply, an error reply
// included, is Redis answering.
func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("reading events: %w", refused), true},
		{io.EOF, true},
		{fmt.Errorf("x: %w", syscall.ECONNRESET), true},
		{redis.Nil, false},
		{errors.New("plain"), false},
		{context.Canceled, false},
		{redis.ErrClosed, false},
	}
	for _, c := range cases {
		if got := unreachable(c.err); got != c.want {
			t.Errorf("unreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: closedPort(t)})
	defer rdb.Close()
	w := &redisWatch{}
	rdb.AddHook(w)
	if err := rdb.Ping(context.Background()).Err(); !unreachable(err) || !w.away.Load() {
		t.Fatalf("a closed port: %v, away %v", err, w.away.Load())
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	// A socket bound to the port and never listening holds it for the test: a connection to it is refused, and no
	// other test's server can take the port meanwhile (a port merely found free could be handed to one).
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

func TestOutageNotes(t *testing.T) {
	held := 3
	o := outage{store: "Redis at 10.0.0.1:6379", patience: 90 * time.Second, held: func() int { n := held; held = 0; return n }}
	err := fmt.Errorf("reading events of run r-x: %w", &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	if got, want := o.away(err), "Redis at 10.0.0.1:6379 does not answer (connection refused); waiting for it (up to 1m30s)…"; got != want {
		t.Errorf("away: %q, want %q", got, want)
	}
	if got, want := o.back(12*time.Second), "Redis at 10.0.0.1:6379 is back after 12s (3 warnings logged meanwhile not shown; ORCH_LOG_LEVEL=warn shows them)."; got != want {
		t.Errorf("back: %q, want %q", got, want)
	}
	if got, want := o.back(time.Second), "Redis at 10.0.0.1:6379 is back after 1s."; got != want {
		t.Errorf("back: %q, want %q", got, want)
	}
	for d, want := range map[time.Duration]string{2 * time.Minute: "2m", 30 * time.Second: "30s", time.Hour: "1h", 90 * time.Minute: "1h30m"} {
		if got := short(d); got != want {
			t.Errorf("short(%s) = %q, want %q", d, got, want)
		}
	}
}
