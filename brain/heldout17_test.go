package brain

// Held-out batch 17: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 16's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 59/60, decide 21/30, options 14/17, recommendation 14/17. Some of its
// misses led to general rules, driven by train cases in other words (xd173–xd185, xc51, xo82–xo88); its floors are
// its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout17", file: "testdata/eval/batch17_interpret.jsonl",
		min: 60.0 / 60, minOptions: 17.0 / 17, minRecommendation: 16.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout17", file: "testdata/eval/batch17_decide.jsonl", min: 30.0 / 30})
}
