package brain

// The interpret batch: outputs written from real test runners' and tools' documented formats across a dozen
// ecosystems (colour codes included), decision requests without a question mark, and offers of optional work, to
// measure the interpret judgement on text it was not written from.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "batch_interpret", file: "testdata/eval/batch_interpret.jsonl", min: 1, minOptions: 16.0 / 17, minRecommendation: 16.0 / 17})
}
