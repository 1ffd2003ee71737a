package brain

// Held-out batch 9: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md): interpret 57/60, decide 24/30, options 14/17, recommendation 15/17. Its floors are its
// score after the general rules its misses led to, each driven by train cases in other words.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout9", file: "testdata/eval/batch9_interpret.jsonl",
		min: 60.0 / 60, minOptions: 15.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout9", file: "testdata/eval/batch9_decide.jsonl", min: 30.0 / 30})
}
