package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// BenchmarkPages measures what the view's pages cost the server (their Server-Timing, as "server-ms") at 10,000
// runs: the runs list, a run's page with a long event log, and a diff of 1,000 files. Against real Redis when
// ORCH_TEST_REDIS_URL names one, else the in-process one.
func BenchmarkPages(b *testing.B) {
	clients := jobstest.Clients(b)
	c, ok := clients["redis"]
	if !ok {
		c = clients["miniredis"]
	}
	st := store.New(c, nil)
	ctx := context.Background()
	const nRuns = 10_000
	var last *jobs.Run
	for i := range nRuns {
		last = benchRun(i)
		if err := st.Create(ctx, last, jobs.NewEvent(last.ID, "", jobs.RunStartedEvent{Tasks: 3})); err != nil {
			b.Fatal(err)
		}
	}
	// The run looked at has a long log: the agent's tool calls among its tasks' events.
	for i := range 300 {
		emit(b, st, last.ID, jobs.NewEvent(last.ID, "1", jobs.AgentActivityEvent{Calls: []string{fmt.Sprintf("Bash: go test ./pkg%d", i)}}),
			jobs.NewEvent(last.ID, "1", jobs.TaskStartedEvent{Title: "Build", Attempt: 1, MaxAttempts: 3, Agent: "claude"}))
	}
	s, err := New(Config{Store: st, Queue: &queue{}, Diffs: fakeDiffs{n: 1000}, LocalUser: "carol",
		Front: &runs.Front{Options: jobs.Options{Agent: "sim"}, Agents: runs.KnownAgents}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, page := range []struct{ name, path string }{
		{"runs_at_10k", "/"},
		{"runs_page_100_at_10k", "/?page=100"},
		{"run_at_10k", "/runs/" + last.ID},
		{"diff_1000_files", "/runs/" + last.ID + "/diff"},
		{"diff_1000_files_last_page", "/runs/" + last.ID + "/diff?page=19"},
	} {
		b.Run(page.name, func(b *testing.B) {
			var total float64
			for b.Loop() {
				total += serverMS(b, srv.URL+page.path)
			}
			b.ReportMetric(total/float64(b.N), "server-ms")
		})
	}
}

// benchRun is the i-th of many runs: three tasks, attempts with costs, a branch.
func benchRun(i int) *jobs.Run {
	at := time.Now().Add(-time.Duration(10_000-i) * time.Minute)
	r := &jobs.Run{ID: jobs.NewRunID(), PlanPath: fmt.Sprintf("plans/feature-%d.md", i%40), PlanTitle: fmt.Sprintf("Feature %d", i),
		Status: jobs.RunCompleted, Origin: jobs.Origin{Kind: "slack", User: fmt.Sprintf("U%03d", i%30)}, CreatedAt: at,
		EndedAt: at.Add(12 * time.Minute), Options: jobs.Options{Agent: "claude"},
		Git: &jobs.Git{Branch: "orch/bench", Base: "main", BaseCommit: "abc", Head: "def", FilesChanged: 1000}}
	for t := range 3 {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: strconv.Itoa(t + 1), Title: "Build", Status: jobs.TaskCompleted,
			Attempts: []*jobs.Attempt{{Status: "completed", Duration: time.Minute, CostUSD: 0.12, Brain: jobs.BrainUsage{CostUSD: 0.01}}}})
	}
	if i == 9_999 {
		r.Status, r.EndedAt = jobs.RunRunning, time.Time{}
	}
	return r
}

// serverMS gets the page and reads what it cost the server.
func serverMS(b *testing.B, u string) float64 {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	v, ok := strings.CutPrefix(resp.Header.Get("Server-Timing"), "app;dur=")
	ms, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		b.Fatalf("GET %s: Server-Timing %q", u, resp.Header.Get("Server-Timing"))
	}
	return ms
}
