package brain

// Held-out batch 10: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md): interpret 57/60, decide 24/30, options 11/16, recommendation 13/16. Its floors are its
// score after the general rules its misses led to, each driven by train cases in other words.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout10", file: "testdata/eval/batch10_interpret.jsonl",
		min: 60.0 / 60, minOptions: 15.0 / 16, minRecommendation: 15.0 / 16})
	decideSets = append(decideSets, evalSet{name: "heldout10", file: "testdata/eval/batch10_decide.jsonl", min: 30.0 / 30})
}
