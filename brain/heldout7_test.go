package brain

// Held-out batch 7: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md): interpret 54/60, decide 27/30, options 11/17, recommendation 9/17. Its floors are its
// score after the general rules its misses led to, each driven by train cases in other words.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout7", file: "testdata/eval/batch7_interpret.jsonl",
		min: 60.0 / 60, minOptions: 14.0 / 17, minRecommendation: 15.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout7", file: "testdata/eval/batch7_decide.jsonl", min: 30.0 / 30})
}
