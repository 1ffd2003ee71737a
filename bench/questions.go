package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/orchrun/orch/api"
	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/web"
)

// questionsResult is what listing the questions costs with many runs waiting.
type questionsResult struct {
	sizes []int
	// page, api and show are p50 ms per size: the web view's /questions (the oldest page, rendered), the API's
	// GET /api/v1/questions (its default page of 100), and the lookup of `orch escalation show` (the newest run
	// with an open question).
	page, api, show []float64
	note            string
}

// measureQuestions parks runs on a question through the store, as many as each size says, and times the listings
// people read the questions from, in process (the server's own time: no process start, no network).
func measureQuestions(ctx context.Context, r *rig, sizes []int, samples int) (questionsResult, error) {
	res := questionsResult{sizes: sizes}
	st, q, _ := r.backend()
	view, err := web.New(web.Config{Store: st, Queue: q, LocalUser: "bench"})
	if err != nil {
		return res, err
	}
	srv, err := api.New(api.Config{Store: st, Queue: q, LocalUser: "bench"})
	if err != nil {
		return res, err
	}
	pages, apis := view.Handler(), srv.Handler()
	have := 0
	for _, n := range sizes {
		for ; have < n; have++ {
			if err := parkOne(ctx, st, have); err != nil {
				return res, err
			}
		}
		// As the workers' pass leaves runs that have waited (jobs/store/compact.go): the listings read them compact.
		for {
			k, err := st.CompactResting(ctx, 0)
			if err != nil {
				return res, err
			}
			if k == 0 {
				break
			}
		}
		var page, list, show []time.Duration
		for range samples {
			d, err := timeGet(pages, "/questions")
			if err != nil {
				return res, err
			}
			page = append(page, d)
			if d, err = timeGet(apis, api.Prefix+"questions"); err != nil {
				return res, err
			}
			list = append(list, d)
			t0 := time.Now()
			found, _, err := st.Find(ctx, store.Query{Status: store.StatusOpen}, 0, 20)
			if err != nil || len(found) == 0 || found[0].OpenEscalation() == nil {
				return res, fmt.Errorf("the newest waiting run: %d found, %v", len(found), err)
			}
			show = append(show, time.Since(t0))
		}
		res.page = append(res.page, percentileMs(page, 0.5))
		res.api = append(res.api, percentileMs(list, 0.5))
		res.show = append(res.show, percentileMs(show, 0.5))
	}
	last := len(sizes) - 1
	res.note = fmt.Sprintf("N runs parked on an agent's question, written through the store, then compacted as the "+
		"workers' pass compacts runs that have waited 30 s (so each listing reads compact runs); %d samples each, in "+
		"process. At %d waiting: /questions p50 %.2f ms, API list %.2f ms, escalation show's lookup %.2f ms; at %d: "+
		"%.2f (%.2f×), %.2f (%.2f×), %.2f ms (%.2f×).", samples, sizes[0], res.page[0], res.api[0], res.show[0],
		sizes[last], res.page[last], res.page[last]/res.page[0], res.api[last], res.api[last]/res.api[0],
		res.show[last], res.show[last]/res.show[0])
	return res, nil
}

// parkOne saves the i-th run parked on a question with two options.
func parkOne(ctx context.Context, st *store.Store, i int) error {
	r := &jobs.Run{ID: jobs.NewRunID(), PlanPath: "plans/cache.md", PlanTitle: fmt.Sprintf("Cache layer %d", i),
		Status: jobs.RunRunning, Origin: jobs.Origin{Kind: "cli", User: "bench"}, Options: jobs.Options{Agent: "sim", MaxAttempts: 3},
		Tasks: []*jobs.Task{{ID: "1.1", Title: "Add a cache", Status: jobs.TaskRunning}}}
	if err := st.Create(ctx, r); err != nil {
		return err
	}
	_, err := st.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		escalation.Open(r, r.Tasks[0], c, escalation.Spec{Trigger: jobs.TriggerNeedsHelp, Source: "agent",
			Question: "Which cache should I use?", Options: []string{"A) Redis", "B) In-memory"}, Recommendation: "B"},
			time.Now())
		return nil
	})
	return err
}

// timeGet serves one loopback GET of path through h and returns how long it took.
func timeGet(h http.Handler, path string) (time.Duration, error) {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	rec := httptest.NewRecorder()
	t0 := time.Now()
	h.ServeHTTP(rec, req)
	d := time.Since(t0)
	if rec.Code != http.StatusOK {
		return d, fmt.Errorf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	return d, nil
}
