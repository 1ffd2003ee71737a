package store

import (
	"context"
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
			if id, err := m.View(ctx, "UALICE"); err != nil || id != "" {
				t.Fatalf("View before any = %q, %v; want none", id, err)
			}
			if err := m.SetView(ctx, "UALICE", "V1", time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := m.SetView(ctx, "UBOB", "V2", time.Second); err != nil {
				t.Fatal(err)
			}
			if id, _ := m.View(ctx, "UALICE"); id != "V1" {
				t.Errorf("alice's view = %q, want V1", id)
			}
			b.pass(1500 * time.Millisecond)
			if id, _ := m.View(ctx, "UBOB"); id != "" {
				t.Errorf("bob's view = %q after its ttl, want none", id)
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
