package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// A view id is per person and expires; a look counts until its ttl has passed, measured from the reader's since.
func TestMirrorViewers(t *testing.T) {
	for name, b := range mirrorBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := testMirror(t, b.rdb)
			shown := func(person, id string) bool {
				t.Helper()
				ok, err := m.ShownView(ctx, person, id)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if shown("UALICE", "V1") || shown("UALICE", "") {
				t.Fatal("a view shown before any was recorded")
			}
			for i := 1; i <= keptViews+1; i++ {
				if err := m.SetView(ctx, "UALICE", fmt.Sprintf("V%d", i), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.SetView(ctx, "UBOB", "VB", time.Second); err != nil {
				t.Fatal(err)
			}
			// The last few views are alice's; the oldest beyond them, and bob's, are not.
			for i := 2; i <= keptViews+1; i++ {
				if !shown("UALICE", fmt.Sprintf("V%d", i)) {
					t.Errorf("alice's view V%d is not among the last shown", i)
				}
			}
			if shown("UALICE", "V1") || shown("UALICE", "VB") || shown("UBOB", "V6") {
				t.Error("a view beyond the last few, or another person's, counts as shown")
			}
			b.pass(1500 * time.Millisecond)
			if shown("UBOB", "VB") {
				t.Error("bob's view still counts after its ttl")
			}

			now := time.Now()
			if err := m.Looked(ctx, "UALICE", now.Add(-2*time.Hour), 3*time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := m.Looked(ctx, "UBOB", now, 3*time.Hour); err != nil {
				t.Fatal(err)
			}
			got, err := m.LookedSince(ctx, now.Add(-time.Hour))
			if err != nil || !slices.Equal(got, []string{"UBOB"}) {
				t.Errorf("looked in the last hour = %v, %v; want bob", got, err)
			}
			got, _ = m.LookedSince(ctx, now.Add(-3*time.Hour))
			slices.Sort(got)
			if !slices.Equal(got, []string{"UALICE", "UBOB"}) {
				t.Errorf("looked in the last 3 hours = %v, want both", got)
			}
			// A look past the ttl of a later one is dropped.
			if err := m.Looked(ctx, "UCAROL", now.Add(2*time.Hour), 3*time.Hour); err != nil {
				t.Fatal(err)
			}
			got, _ = m.LookedSince(ctx, now.Add(-3*time.Hour))
			slices.Sort(got)
			if !slices.Equal(got, []string{"UBOB", "UCAROL"}) {
				t.Errorf("after a later look = %v, want bob and carol (alice's look is past its ttl)", got)
			}
		})
	}
}
