package main

import (
	"math"
	"slices"
	"sync"
	"time"
)

// durations collects samples from many goroutines.
type durations struct {
	mu  sync.Mutex
	all []time.Duration
}

func (d *durations) add(v time.Duration) { d.mu.Lock(); d.all = append(d.all, v); d.mu.Unlock() }

func (d *durations) reset() { d.mu.Lock(); d.all = d.all[:0]; d.mu.Unlock() }

// take returns the samples so far and starts afresh.
func (d *durations) take() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.all)
	d.all = d.all[:0]
	return out
}

// percentileMs is the nearest-rank p-th percentile (0 < p ≤ 1) of the samples in milliseconds: a value that was
// actually measured, never an interpolation. NaN without samples.
func percentileMs(samples []time.Duration, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	i := max(0, int(math.Ceil(p*float64(len(s))))-1)
	return ms(s[i])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
