package bot

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/bot/slackfake"
	"github.com/orchrun/orch/jobs"
)

// slackCall is a chat.postMessage or chat.update the bot made, as it reached Slack.
type slackCall struct {
	method, channel, ts, threadTS, text string
}

// recordingSlack sits in front of the fake's Web API and records, in order, the messages the bot posts and updates.
type recordingSlack struct {
	srv    *httptest.Server
	target string
	mu     sync.Mutex
	calls  []slackCall
}

func newRecordingSlack(t *testing.T, fake *slackfake.Slack) *recordingSlack {
	r := &recordingSlack{target: fake.APIURL()}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recordingSlack) APIURL() string { return r.srv.URL + "/api/" }

func (r *recordingSlack) serve(w http.ResponseWriter, req *http.Request) {
	method := strings.TrimPrefix(req.URL.Path, "/api/")
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	if method == "chat.postMessage" || method == "chat.update" {
		v, _ := url.ParseQuery(string(body))
		r.mu.Lock()
		r.calls = append(r.calls, slackCall{method: method, channel: v.Get("channel"), ts: v.Get("ts"),
			threadTS: v.Get("thread_ts"), text: v.Get("text")})
		r.mu.Unlock()
	}
	forward(w, req, r.target+method)
}

// since are the calls recorded from the n-th on.
func (r *recordingSlack) since(n int) []slackCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slackCall(nil), r.calls[n:]...)
}

func (r *recordingSlack) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// Fifty runs in one channel wait on a question while Slack is away; meanwhile all are answered, make progress and end.
// When Slack is back, with a post every 20ms allowed in the channel, the messages that matter go first: the finals are
// posted before the progress messages are brought up to date, and each of those is updated once, in its latest state.
func TestPosterCatchUpOrder(t *testing.T) {
	const (
		runs   = 50
		rounds = 3 // rounds of progress of every run between its answer and its end
	)
	var rec *recordingSlack
	h := newHarness(t, clients(t)["miniredis"], func(h *harness, c *Config) {
		rec = newRecordingSlack(t, h.fake)
		c.APIURL, c.PostInterval = rec.APIURL(), 20*time.Millisecond
	})
	alice := h.user("ALICE")
	ids := make([]string, 0, runs)
	questions := map[string]string{}
	for range runs {
		run, _ := h.startRun(alice)
		h.startTask(run.ID, 1)
		ids = append(ids, run.ID)
		questions[run.ID] = h.ask(run.ID, "Which cache?", "A) Redis", "B) In-memory")
	}
	progressTS := map[string]string{} // progress message ts → run id
	h.waitFor("every run's question and progress message", func() bool {
		// A run settled stays so: nothing changes it until the test does. (The poster passes over the runs all the
		// time, so at any moment one of them is likely to be locked.)
		for _, id := range ids {
			st, _ := h.mirror.State(context.Background(), id)
			if ts := st["progress_ts"]; progressTS[ts] == "" && st["esc:"+questions[id]] != "" && ts != "" && h.idle(id) {
				progressTS[ts] = id
			}
		}
		return len(progressTS) == runs
	})

	h.fake.Down()
	for _, id := range ids {
		h.answerFromTerminal(id, questions[id], "A")
		for round := 2; round < 2+rounds; round++ {
			h.startTask(id, round)
		}
		h.complete(id)
	}
	mark := rec.count()
	h.fake.Up()
	for _, id := range ids {
		h.done(id)
	}
	latest := jobs.AttemptText(1+rounds, 3)
	h.waitFor("every progress message in its latest state", func() bool {
		for ts := range progressTS {
			if !strings.Contains(blocksText(h.message(ts)), latest) {
				return false
			}
		}
		return true
	})

	progress, finals, progressBeforeLastFinal, finalsBeforeFirstProgress := 0, 0, 0, -1
	for _, c := range rec.since(mark) {
		_, isProgress := progressTS[c.ts]
		switch {
		case c.method == "chat.update" && isProgress:
			progress++
			if finals < runs {
				progressBeforeLastFinal++
			}
			if finalsBeforeFirstProgress < 0 {
				finalsBeforeFirstProgress = finals
			}
		case c.method == "chat.postMessage" && strings.Contains(c.text, " completed in "):
			finals++
		}
	}
	t.Logf("once Slack was back: %d finals; %d progress updates, %d of them before the last final; %d finals before the first progress update",
		finals, progress, progressBeforeLastFinal, finalsBeforeFirstProgress)
	if finals != runs {
		t.Fatalf("%d final messages, want %d", finals, runs)
	}
	if finalsBeforeFirstProgress != runs {
		t.Errorf("%d finals were posted before the first progress update, want all %d: progress went ahead of the ends",
			finalsBeforeFirstProgress, runs)
	}
	if progress != runs {
		t.Errorf("%d progress updates for %d progress messages, want one each: superseded progress was sent", progress, runs)
	}
}
