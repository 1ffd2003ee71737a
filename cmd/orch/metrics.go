package main

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/queue"
	"github.com/orchrun/orch/jobs/store"
)

// metrics is what `GET /metrics` shows, under the names the seed's PromQL uses. Counters come from the events of
// the changes this process commits (store.Store.Observe), so each process counts its own part — the worker its runs
// and escalations, the bot the answers given through it — and Prometheus adds them up.
type metrics struct {
	reg         *prometheus.Registry
	escalations *escalation.Metrics
	runs        *prometheus.CounterVec
	tasks       *prometheus.CounterVec
	taskSeconds prometheus.Histogram
	agentCost   prometheus.Counter
	spend       *prometheus.CounterVec
}

// waitBuckets are for how long humans take: seconds to a day.
var waitBuckets = []float64{5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}

func newMetrics(b *store.Backend) *metrics {
	m := &metrics{
		reg:         prometheus.NewRegistry(),
		escalations: escalation.NewMetrics(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orchestrator_runs_total",
			Help: "Runs that ended, by status."}, []string{"status"}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orchestrator_tasks_total",
			Help: "Task attempts that ended, by status."}, []string{"status"}),
		taskSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "orchestrator_task_duration_seconds",
			Help: "How long a completed task's agent ran.", Buckets: prometheus.ExponentialBuckets(1, 2, 14)}),
		agentCost: prometheus.NewCounter(prometheus.CounterOpts{Name: "orchestrator_agent_cost_usd_total",
			Help: "What the agents cost, in USD, as they reported it."}),
		spend: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "orchestrator_spend_usd_total",
			Help: "What the runs of each team cost, agent and brain, in USD, as this process recorded it."}, []string{"team"}),
	}
	m.reg.MustRegister(m.runs, m.tasks, m.taskSeconds, m.agentCost, m.spend, &escalationCollector{m.escalations},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "orchestrator_parked_runs",
			Help: "Runs waiting for a human (holding no worker)."}, func() float64 { return parkedRuns(b.Store) }))
	// The steps' figure is every step queue's, the teams' included (jobs/queue/teams.go).
	sizes := map[string]func() int{queue.Steps: b.Queue.StepsSize, queue.Control: func() int { return b.Queue.Size(queue.Control) }}
	for q, size := range sizes {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "asynq_queue_size",
			Help:        "Tasks in an asynq queue (pending, scheduled, retrying, active); orch-steps counts every step queue.",
			ConstLabels: prometheus.Labels{"queue": q}}, func() float64 { return float64(size()) }))
	}
	b.Store.OnSpend(func(team string, usd float64) { m.spend.WithLabelValues(team).Add(usd) })
	b.Store.Observe(func(events []jobs.Event) {
		m.escalations.Observe(events)
		m.observe(events)
	})
	return m
}

func (m *metrics) observe(events []jobs.Event) {
	for _, e := range events {
		switch b := e.Body.(type) {
		case jobs.RunCompletedEvent:
			m.runs.WithLabelValues("completed").Inc()
		case jobs.RunFailedEvent:
			m.runs.WithLabelValues("failed").Inc()
		case jobs.RunAbortedEvent:
			m.runs.WithLabelValues("aborted").Inc()
		case jobs.TaskCompletedEvent:
			m.tasks.WithLabelValues("completed").Inc()
			m.taskSeconds.Observe(float64(b.DurationMS) / 1000)
			m.agentCost.Add(b.CostUSD)
		case jobs.TaskFailedEvent:
			m.tasks.WithLabelValues("failed").Inc()
		}
	}
}

// handler serves the registry.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// parkedRuns counts the runs waiting for a human, from their index: the same cost at ten as at a hundred thousand.
func parkedRuns(s *store.Store) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := s.Waiting(ctx)
	if err != nil {
		return 0
	}
	return float64(n)
}

// escalationCollector exports the escalation hooks' counters at scrape time.
type escalationCollector struct{ m *escalation.Metrics }

var (
	descEscalations = prometheus.NewDesc("orchestrator_escalations_total", "Escalations to a human, by trigger.", []string{"trigger"}, nil)
	descLoops       = prometheus.NewDesc("orchestrator_loops_detected_total", "Loops stopped, by type.", []string{"type"}, nil)
	descResolutions = prometheus.NewDesc("orchestrator_resolutions_total", "Answers to escalations, by type.", []string{"type"}, nil)
	descWait        = prometheus.NewDesc("orchestrator_escalation_wait_seconds", "How long humans took to answer.", nil, nil)
)

func (c *escalationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descEscalations
	ch <- descLoops
	ch <- descResolutions
	ch <- descWait
}

func (c *escalationCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.Snapshot()
	for k, v := range s.Escalations {
		ch <- prometheus.MustNewConstMetric(descEscalations, prometheus.CounterValue, float64(v), k)
	}
	for k, v := range s.Loops {
		ch <- prometheus.MustNewConstMetric(descLoops, prometheus.CounterValue, float64(v), k)
	}
	for k, v := range s.Resolutions {
		ch <- prometheus.MustNewConstMetric(descResolutions, prometheus.CounterValue, float64(v), k)
	}
	buckets := make(map[float64]uint64, len(waitBuckets))
	var sum float64
	for _, w := range s.Waits {
		sec := w.Seconds()
		sum += sec
		for _, b := range waitBuckets {
			if sec <= b {
				buckets[b]++
			}
		}
	}
	ch <- prometheus.MustNewConstHistogram(descWait, uint64(len(s.Waits)), sum, buckets)
}
