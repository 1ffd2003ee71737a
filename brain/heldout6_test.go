package brain

// Held-out batch 6: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md): interpret 55/60, decide 24/30, options 6/17, recommendation 9/17. Its floors are its
// score after the general rules its misses led to, each driven by train cases in other words.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout6", file: "testdata/eval/batch6_interpret.jsonl",
		min: 60.0 / 60, minOptions: 8.0 / 17, minRecommendation: 11.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout6", file: "testdata/eval/batch6_decide.jsonl", min: 29.0 / 30})
}
