package brain

// Held-out batch 5: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md): interpret 53/60, decide 24/30, options 14/20, recommendation 15/20. Its floors are
// its score after the general rules its misses led to, each driven by train cases in other words.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout5", file: "testdata/eval/batch5_interpret.jsonl",
		min: 58.0 / 60, minOptions: 17.0 / 20, minRecommendation: 17.0 / 20})
	decideSets = append(decideSets, evalSet{name: "heldout5", file: "testdata/eval/batch5_decide.jsonl", min: 30.0 / 30})
}
