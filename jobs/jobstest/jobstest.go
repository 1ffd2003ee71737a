// Package jobstest gives tests the Redis servers orch's integration tests run against: miniredis always, and the
// real server named by ORCH_TEST_REDIS_URL (CI starts one and sets it; a CI run without it fails).
package jobstest

import (
	"context"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Clients returns a client per backend under test, closed when the test ends: "miniredis", and "redis" when
// ORCH_TEST_REDIS_URL is set (on this test process's own database: see URL).
func Clients(t testing.TB) map[string]redis.UniversalClient {
	t.Helper()
	m := miniredis.RunT(t)
	out := map[string]redis.UniversalClient{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	if url := URL(t); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			t.Fatalf("ORCH_TEST_REDIS_URL: %v", err)
		}
		out["redis"] = redis.NewClient(opt)
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}

var (
	once    sync.Once
	url     string
	urlErr  error
	counter = "orch:test:databases"
)

// URL is the real Redis of the integration tests, on a database of this test process's own ("" when
// ORCH_TEST_REDIS_URL is not set; outside CI the tests that need it skip). `go test ./...` runs the packages' tests
// at the same time, and several of them start asynq servers: on a shared database one package's workers would take
// the tasks another's tests enqueue. So each process takes the next of databases 1 to N-1 (N: the server's
// `databases`, 16 by default) from a counter in database 0, emptied for it: fewer than N-1 test processes and tests
// with databases of their own may run at once.
func URL(t testing.TB) string {
	t.Helper()
	if base(t) == "" {
		return ""
	}
	once.Do(func() { url, urlErr = next() })
	if urlErr != nil {
		t.Fatalf("ORCH_TEST_REDIS_URL: %v", urlErr)
	}
	return url
}

// NewDatabase is a database of the real Redis for one test alone ("" when there is none): for a test whose workers
// must not take the tasks of the other tests of its process.
func NewDatabase(t testing.TB) string {
	t.Helper()
	if base(t) == "" {
		return ""
	}
	u, err := next()
	if err != nil {
		t.Fatalf("ORCH_TEST_REDIS_URL: %v", err)
	}
	return u
}

func base(t testing.TB) string {
	u := os.Getenv("ORCH_TEST_REDIS_URL")
	if u == "" && os.Getenv("CI") == "true" {
		t.Fatal("CI must set ORCH_TEST_REDIS_URL: integration tests run against a real Redis there")
	}
	return u
}

// next takes the next database from the counter.
func next() (string, error) {
	opt, err := redis.ParseURL(os.Getenv("ORCH_TEST_REDIS_URL"))
	if err != nil {
		return "", err
	}
	opt.DB = 0
	c := redis.NewClient(opt)
	defer c.Close()
	n, err := c.Incr(context.Background(), counter).Result()
	if err != nil {
		return "", err
	}
	// The ring is as large as the server has databases (16 unless configured: CI starts it with more), so that a
	// database is emptied for a new owner only once everything before it in the ring was handed out.
	dbs := 16
	if v, err := c.ConfigGet(context.Background(), "databases").Result(); err == nil {
		if d, err := strconv.Atoi(v["databases"]); err == nil && d > 1 {
			dbs = d
		}
	}
	opt.DB = 1 + int((n-1)%int64(dbs-1))
	// What an earlier test process left there (a queued step of a run of its own) is not this one's to run.
	db := redis.NewClient(opt)
	defer db.Close()
	if err := db.FlushDB(context.Background()).Err(); err != nil {
		return "", err
	}
	u := &neturl.URL{Scheme: "redis", Host: opt.Addr, Path: fmt.Sprintf("/%d", opt.DB)}
	if opt.Password != "" {
		u.User = neturl.UserPassword(opt.Username, opt.Password)
	}
	return u.String(), nil
}

// FreePort is a loopback port nothing listens on at the moment: for a server a test starts itself, or for a peer
// that must not answer.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
