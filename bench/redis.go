package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is the Redis the measurements run against: one this program started (and stops), or the one named by
// ORCH_BENCH_REDIS_URL.
type redisServer struct {
	URL    string
	Client *redis.Client
	cmd    *exec.Cmd // nil for an external server
	dir    string
}

// startRedis starts redis-server on a free loopback port with production's settings (deploy/redis.conf: an
// append-only file written every second, no eviction, small stream nodes), in a directory of its own under tmp.
func startRedis(ctx context.Context, tmp string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not on PATH (Debian: apt-get install redis-server), or set ORCH_BENCH_REDIS_URL")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "redis")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	conf, err := filepath.Abs(filepath.Join("deploy", "redis.conf"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(conf); err != nil {
		return nil, fmt.Errorf("the production Redis settings: %w (run the bench from the repository root)", err)
	}
	cmd := exec.Command(bin, conf, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--logfile", filepath.Join(dir, "redis.log"))
	stopWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	s := &redisServer{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), cmd: cmd, dir: dir}
	s.Client = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := s.Client.Ping(ctx).Err(); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			s.Close()
			return nil, fmt.Errorf("redis-server did not answer on port %d: %v\n%s", port, err, log)
		}
	}
}

// connectRedis uses an existing server. Its database must be empty: the measurements flush it between them.
func connectRedis(ctx context.Context, url string) (*redisServer, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ORCH_BENCH_REDIS_URL: %w", err)
	}
	c := redis.NewClient(opt)
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ORCH_BENCH_REDIS_URL: %w", err)
	}
	if n > 0 {
		c.Close()
		return nil, fmt.Errorf("ORCH_BENCH_REDIS_URL: database holds %d keys; the benchmark flushes it between measurements, so give it an empty one", n)
	}
	return &redisServer{URL: url, Client: c}, nil
}

// Close stops the server if this program started it.
func (s *redisServer) Close() {
	s.Client.Close()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// Flush empties the database between measurements, so that each one starts from nothing.
func (s *redisServer) Flush(ctx context.Context) error {
	return s.Client.FlushDB(ctx).Err()
}

// Version is the server's redis_version.
func (s *redisServer) Version(ctx context.Context) string {
	return infoField(ctx, s.Client, "server", "redis_version")
}

// UsedMemory is INFO's used_memory: what the allocator holds for the whole server.
func (s *redisServer) UsedMemory(ctx context.Context) (int64, error) {
	v := infoField(ctx, s.Client, "memory", "used_memory")
	if v == "" {
		return 0, errors.New("INFO memory has no used_memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

func infoField(ctx context.Context, c *redis.Client, section, field string) string {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
