// Package jobstest gives tests the Redis servers orch's integration tests run against: miniredis always, and the
// real server named by ORCH_TEST_REDIS_URL (CI starts one and sets it; a CI run without it fails).
package jobstest

import (
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Clients returns a client per backend under test, closed when the test ends: "miniredis", and "redis" when
// ORCH_TEST_REDIS_URL is set.
func Clients(t testing.TB) map[string]redis.UniversalClient {
	t.Helper()
	m := miniredis.RunT(t)
	out := map[string]redis.UniversalClient{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	if url := os.Getenv("ORCH_TEST_REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			t.Fatalf("ORCH_TEST_REDIS_URL: %v", err)
		}
		out["redis"] = redis.NewClient(opt)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI must set ORCH_TEST_REDIS_URL: integration tests run against a real Redis there")
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}
