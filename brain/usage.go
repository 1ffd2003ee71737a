package brain

import "strings"

// Usage is what the LLM calls behind one judgement consumed, so that `orch costs` can show the brain's share of
// a run next to the agents'.
type Usage struct {
	Backend string // "anthropic" or "claude"
	Model   string
	// InputTokens counts every prompt token, cache writes and reads included; OutputTokens the reply's.
	InputTokens, OutputTokens int64
	// CostUSD is the claude CLI's own total_cost_usd when it reports one, else an estimate from modelPrices.
	CostUSD float64
	// Calls counts the model calls that returned a reply (a corrective prompt makes two). Tries that failed
	// with 429/529 or a dead process are not billed and not counted.
	Calls int
}

// add sums o into u; Backend and Model stay those of the first call.
func (u *Usage) add(o Usage) {
	if u.Backend == "" {
		u.Backend = o.Backend
	}
	if u.Model == "" {
		u.Model = o.Model
	}
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CostUSD += o.CostUSD
	u.Calls += o.Calls
}

// price is a model's list price in USD per million tokens.
type price struct{ in, out float64 }

// modelPrices is Anthropic's list price per million tokens, by model-id prefix (the longest matching prefix
// wins), as published in early 2026. It is an ESTIMATE: it ignores batch and priority tiers, regional
// uplifts and long-context surcharges, and goes stale when prices change; update it here. A model it does
// not know costs 0 (unknown) while its tokens are still counted.
var modelPrices = []struct {
	prefix string
	p      price
}{
	{"claude-haiku-4", price{1, 5}},
	{"claude-3-5-haiku", price{0.8, 4}},
	{"claude-3-haiku", price{0.25, 1.25}},
	{"claude-sonnet-4", price{3, 15}},
	{"claude-3-7-sonnet", price{3, 15}},
	{"claude-opus-4", price{5, 25}}, // Opus 4.5 and later
	{"claude-opus-4-0", price{15, 75}},
	{"claude-opus-4-1", price{15, 75}},
	{"claude-opus-4-2025", price{15, 75}}, // claude-opus-4-20250514, i.e. Opus 4.0
	// The Claude Code CLI's aliases.
	{"haiku", price{1, 5}},
	{"sonnet", price{3, 15}},
	{"opus", price{5, 25}},
}

// Prompt-cache tokens are billed as a multiple of the input price: writes (5-minute TTL) at 1.25x, reads at
// 0.1x. orch does not ask for caching, but the CLI does on its own.
const (
	cacheWriteFactor = 1.25
	cacheReadFactor  = 0.1
)

// estimateCost is the list-price cost of one call; ok is false for a model modelPrices does not know.
func estimateCost(model string, input, cacheWrite, cacheRead, output int64) (usd float64, ok bool) {
	var best price
	n := -1
	for _, m := range modelPrices {
		if strings.HasPrefix(model, m.prefix) && len(m.prefix) > n {
			best, n = m.p, len(m.prefix)
		}
	}
	if n < 0 {
		return 0, false
	}
	in := float64(input) + cacheWriteFactor*float64(cacheWrite) + cacheReadFactor*float64(cacheRead)
	return (in*best.in + float64(output)*best.out) / 1e6, true
}
