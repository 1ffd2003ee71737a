package escalation

import (
	"sort"
	"sync"
	"time"

	"github.com/orchrun/orch/jobs"
)

// Metrics counts what the escalation machinery does, from the events of committed changes (store.Store.Observe), so
// that a change retried under contention is counted once and every process that commits a change counts it: the
// worker its escalations and loops, the terminal or the bot its resolutions.
type Metrics struct {
	mu          sync.Mutex
	escalations map[string]int // by trigger
	resolutions map[string]int // by resolution type
	loops       map[string]int // by kind: "task" (the attempt cap or the brain saw one)
	waits       []time.Duration
}

// NewMetrics returns empty counters.
func NewMetrics() *Metrics {
	return &Metrics{escalations: map[string]int{}, resolutions: map[string]int{}, loops: map[string]int{}}
}

// Observe counts a committed change's events.
func (m *Metrics) Observe(events []jobs.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range events {
		switch b := e.Body.(type) {
		case jobs.EscalationEvent:
			m.escalations[b.Trigger.String()]++
		case jobs.ResolutionEvent:
			m.resolutions[string(b.Resolution)]++
			m.waits = append(m.waits, time.Duration(b.WaitSeconds*float64(time.Second)))
		case jobs.LoopDetectedEvent:
			m.loops["task"]++
		}
	}
}

// Snapshot is the counters at one moment.
type Snapshot struct {
	Escalations map[string]int
	Resolutions map[string]int
	Loops       map[string]int
	// Waits are how long humans took to answer, shortest first.
	Waits []time.Duration
}

// Snapshot copies the counters.
func (m *Metrics) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := func(in map[string]int) map[string]int {
		out := make(map[string]int, len(in))
		for k, v := range in {
			out[k] = v
		}
		return out
	}
	waits := append([]time.Duration(nil), m.waits...)
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	return Snapshot{Escalations: cp(m.escalations), Resolutions: cp(m.resolutions), Loops: cp(m.loops), Waits: waits}
}
