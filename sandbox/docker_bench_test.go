package sandbox

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"
)

// BenchmarkDockerStart measures how long a new run waits for its first process: a cold start (create, start, exec
// `true`) against a claim from the warm pool and the same exec; and, for scale, a later task of a run, an exec in
// its running container. Each reports the median and 90th percentile of all its samples in milliseconds; ns/op is
// their mean. Run it with -benchtime=20x or more for stable percentiles.
func BenchmarkDockerStart(b *testing.B) {
	ctx := context.Background()
	sample := func(b *testing.B, d *Docker, root string, before func(), all *[]time.Duration) {
		b.ResetTimer() // not the backend's setup
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			before()
			run := "b" + testSession + "-" + randomHex(4)
			ws := workspace(b, root)
			b.StartTimer()
			start := time.Now()
			res, err := d.Exec(ctx, Spec{RunID: run, Dir: ws, Args: []string{"true"}}, nil)
			el := time.Since(start)
			b.StopTimer()
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Exec: %+v, %v", res, err)
			}
			*all = append(*all, el)
			if err := d.Release(ctx, run, true); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.StopTimer()
		reportPercentiles(b, *all)
	}

	var cold []time.Duration // across the benchmark's rounds, for more samples
	b.Run("cold", func(b *testing.B) {
		d := newTestDocker(b, DockerConfig{})
		sample(b, d, "", func() {}, &cold)
	})

	var warm []time.Duration
	b.Run("warm", func(b *testing.B) {
		root := workspace(b, "") // the workspaces in it have its owner: they claim pool containers
		d := newTestDocker(b, DockerConfig{WarmPool: 2, WorkspaceRoot: root})
		sample(b, d, root, func() { waitIdle(b, d, 2) }, &warm)
	})

	var again []time.Duration
	b.Run("next-task", func(b *testing.B) {
		d := newTestDocker(b, DockerConfig{})
		run := newRunID(b, d)
		spec := Spec{RunID: run, Dir: workspace(b, ""), Args: []string{"true"}}
		if _, err := d.Exec(ctx, spec, nil); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if res, err := d.Exec(ctx, spec, nil); err != nil || res.ExitCode != 0 {
				b.Fatalf("Exec: %+v, %v", res, err)
			}
			again = append(again, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, again)
	})
}

func reportPercentiles(b *testing.B, all []time.Duration) {
	s := slices.Clone(all)
	slices.Sort(s)
	at := func(p float64) float64 { // nearest rank
		i := max(0, int(math.Ceil(p*float64(len(s))))-1)
		return float64(s[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.9), "p90-ms")
	b.ReportMetric(float64(len(s)), "samples")
}
