package brain

import (
	"math"
	"testing"
)

func TestEstimateCost(t *testing.T) {
	tests := []struct {
		model                string
		in, write, read, out int64
		want                 float64
		known                bool
	}{
		{"claude-haiku-4-5-20251001", 1_000_000, 0, 0, 1_000_000, 1 + 5, true},
		{"claude-haiku-4-5", 2000, 0, 0, 100, 2000*1e-6 + 100*5e-6, true},
		{"claude-sonnet-4-5-20250929", 1_000_000, 0, 0, 1_000_000, 3 + 15, true},
		{"claude-opus-4-5-20251101", 1_000_000, 0, 0, 1_000_000, 5 + 25, true},
		{"claude-opus-4-1-20250805", 1_000_000, 0, 0, 1_000_000, 15 + 75, true},
		{"claude-opus-4-20250514", 1_000_000, 0, 0, 0, 15, true},
		{"claude-haiku-4-5", 0, 1_000_000, 1_000_000, 0, 1.25 + 0.1, true},
		{"gpt-4o", 1000, 0, 0, 1000, 0, false},
	}
	for _, tt := range tests {
		got, ok := estimateCost(tt.model, tt.in, tt.write, tt.read, tt.out)
		if ok != tt.known || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("estimateCost(%s) = %v, %v; want %v, %v", tt.model, got, ok, tt.want, tt.known)
		}
	}
}
