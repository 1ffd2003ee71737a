package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/orchrun/orch/api"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// The API's two measurements: an answer POSTed to the API to the resumed agent starting, measured as a Slack click is
// (resume.go); and GET /api/v1/runs in the 10,000-run workspace, beside the web view's pages (web.go).

// apiToken is the bench's token: the API is measured as it is served beyond loopback, token checked.
const apiToken = "bench-api-token-0123456789"

// answerToResume starts n runs of the ambiguous-task example, waits for each to park on its question, then answers
// each in turn with POST /api/v1/runs/{id}/answer {"choose":"B"} at a random moment of the workers' poll loops, and
// returns the time from each POST to the run's resumed attempt starting (its task_started commit).
func answerToResume(ctx context.Context, r *rig, poll time.Duration, n int) ([]time.Duration, error) {
	st, q, events := r.backend()
	ended, resumed := watchAnswers(events)
	w, err := r.startWorker(st, q, poll)
	if err != nil {
		return nil, err
	}
	defer w.Shutdown()
	ws, plan, err := r.ambiguousWorkspace()
	if err != nil {
		return nil, err
	}
	tokens, err := api.ParseTokens("bench:" + apiToken)
	if err != nil {
		return nil, err
	}
	s, err := api.New(api.Config{Store: st, Queue: q, Tokens: tokens, Log: r.log})
	if err != nil {
		return nil, err
	}
	url, stop, err := serve(s.Handler())
	if err != nil {
		return nil, err
	}
	defer stop()
	var ids []string
	for range n {
		run, err := planRun(plan, ws, simOptions(plan), jobs.Origin{Kind: "api", User: "bench"})
		if err != nil {
			return nil, err
		}
		if err := startRun(ctx, st, q, run); err != nil {
			return nil, err
		}
		ids = append(ids, run.ID)
	}
	if err := waitParked(ctx, st, ids, time.Minute+time.Duration(n)*(time.Second+2*poll)); err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	var lat []time.Duration
	for _, id := range ids {
		if err := sleep(ctx, mrand.N(poll)); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := answerOverAPI(ctx, client, url, id); err != nil {
			return nil, err
		}
		// The next answer waits for this run to end, so that it finds the workers idle, as an answer mostly does.
		if _, err := await(ctx, ended.expect(id), 30*time.Second+4*poll); err != nil {
			return nil, fmt.Errorf("run %s did not end after the answer: %w", id, err)
		}
		at, err := await(ctx, resumed.expect(id), time.Second)
		if err != nil {
			return nil, fmt.Errorf("run %s did not resume after the answer: %w", id, err)
		}
		lat = append(lat, at.Sub(start))
	}
	return lat, nil
}

// answerOverAPI chooses B for run id's question, as a script would.
func answerOverAPI(ctx context.Context, client *http.Client, url, id string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/api/v1/runs/"+id+"/answer", bytes.NewReader([]byte(`{"choose":"B"}`)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answering run %s: %s %s", id, resp.Status, body)
	}
	return nil
}

// waitParked waits until every run of ids waits on its question.
func waitParked(ctx context.Context, st *store.Store, ids []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, id := range ids {
		for {
			run, err := st.Get(ctx, id)
			if err != nil {
				return err
			}
			if run.Status == jobs.RunParked && run.OpenEscalation() != nil {
				break
			}
			if run.Status.Terminal() {
				return fmt.Errorf("run %s ended %s before it asked", id, run.Status)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("run %s did not park within %s", id, timeout)
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureAPIResume measures answer to resume through the API with orch's poll interval, as many as Slack's clicks,
// beside the click's p50 of the same bench run.
func measureAPIResume(ctx context.Context, r *rig, n int, res *Results) error {
	lat, err := answerToResume(ctx, r, 20*time.Millisecond, n)
	if err != nil {
		return err
	}
	res.APIResumeP50Ms = roundTo(percentileMs(lat, 0.5), 2)
	res.APIResumeP99Ms = roundTo(percentileMs(lat, 0.99), 2)
	res.Notes.APIResume = fmt.Sprintf("%d answers with orch's poll interval (20 ms), each to the question of its own run "+
		"of examples/plans/ambiguous_task.md (sim agent) parked on it: from the POST of /api/v1/runs/{id}/answer "+
		"{\"choose\":\"B\"} with a bearer token to the commit of the resumed attempt's task_started, as resume_p50_ms "+
		"measures a Slack click. Path: the API's handler (token check, the person's rate, JSON), then a click's path "+
		"from escalation.Resolve on; unlike a click it waits for nothing in the background before answering. Each "+
		"answer comes at a random moment within one poll interval after the previous run ended. Nearest-rank "+
		"percentiles: p50 %.1f, p99 %.1f ms; the Slack click in the same bench run: p50 %.1f ms, so %+.1f ms.",
		len(lat), percentileMs(lat, 0.5), percentileMs(lat, 0.99), res.ResumeP50Ms, percentileMs(lat, 0.5)-res.ResumeP50Ms)
	return nil
}
