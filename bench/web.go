package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// webResult is what the web view's pages cost the server in a workspace with a long history.
type webResult struct {
	list, filtered, run float64 // p50 ms of the server's own time (Server-Timing)
	note                string
	// apiP50 and apiP99 are GET /api/v1/runs as its client sees it.
	apiP50, apiP99 float64
	apiNote        string
}

var serverTimingRe = regexp.MustCompile(`app;dur=([0-9.]+)`)

// measureWeb starts `orch web --no-worker` in ws, whose embedded store holds n finished runs and some parked ones,
// and reads the server time of its pages as a browser would load them: the runs page (the newest 50), the runs page
// filtered by status at page 20, and a run's page. The server's Server-Timing header is its own time from the
// request to the rendered page, which is what the target is about; the loopback round trip is not in it.
func (r *rig) measureWeb(ctx context.Context, ws string, n, samples int) (webResult, error) {
	var res webResult
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, r.orchBin, "web", "--no-worker", "--addr", addr)
	cmd.Dir = ws
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	base := "http://" + addr
	c := &http.Client{Timeout: 30 * time.Second}
	var page string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if page, _, err = load(c, base+"/"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("orch web did not answer: %w", err)
		}
	}
	m := regexp.MustCompile(`href="/runs/(r-[a-z2-7]+)"`).FindStringSubmatch(page)
	if m == nil {
		return res, fmt.Errorf("the runs page lists no run")
	}
	pages := []struct {
		url string
		dst *float64
	}{{base + "/", &res.list}, {base + "/?status=completed&page=20", &res.filtered}, {base + "/runs/" + m[1], &res.run}}
	for _, p := range pages {
		var times []time.Duration
		for range samples {
			body, d, err := load(c, p.url)
			if err != nil {
				return res, err
			}
			if !strings.Contains(body, "</html>") {
				return res, fmt.Errorf("%s: an incomplete page", p.url)
			}
			times = append(times, d)
		}
		*p.dst = percentileMs(times, 0.5)
	}
	var apiTimes []time.Duration
	for range samples * 4 {
		// Paced under the API's rate for one person (20 a second), as a script that respects it is.
		time.Sleep(60 * time.Millisecond)
		t0 := time.Now()
		body, err := getJSON(c, base+"/api/v1/runs")
		if err != nil {
			return res, err
		}
		if !strings.Contains(body, `"runs"`) {
			return res, fmt.Errorf("GET /api/v1/runs: %s", body)
		}
		apiTimes = append(apiTimes, time.Since(t0))
	}
	res.apiP50, res.apiP99 = percentileMs(apiTimes, 0.5), percentileMs(apiTimes, 0.99)
	res.apiNote = fmt.Sprintf("GET /api/v1/runs (the newest 50, as JSON) from the same `orch web --no-worker` in the "+
		"%d-run workspace, on loopback without a token (the view's loopback mode), %d requests 60 ms apart (under the "+
		"API's rate for one person), timed by the client from the request to the last byte: p50 %.2f ms, p99 %.2f ms.", n, len(apiTimes), res.apiP50, res.apiP99)
	res.note = fmt.Sprintf("`orch web --no-worker` in the workspace of %d finished runs (and the parked ones) of the history "+
		"measurement; %d loads of each page, the server's own time from its Server-Timing header (reading the store and "+
		"rendering; not the loopback round trip): the runs page (newest 50) p50 %.2f ms, filtered by status at page 20 "+
		"p50 %.2f ms, a run's page p50 %.2f ms.", n, samples, res.list, res.filtered, res.run)
	return res, nil
}

// load GETs u and returns the page and the server time it reports.
func load(c *http.Client, u string) (string, time.Duration, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	m := serverTimingRe.FindStringSubmatch(resp.Header.Get("Server-Timing"))
	if m == nil {
		return "", 0, fmt.Errorf("GET %s: no Server-Timing", u)
	}
	ms, _ := strconv.ParseFloat(m[1], 64)
	return string(body), time.Duration(ms * float64(time.Millisecond)), nil
}

// getJSON GETs u and returns its body.
func getJSON(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s %s", u, resp.Status, body)
	}
	return string(body), nil
}
