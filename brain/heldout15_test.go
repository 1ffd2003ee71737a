package brain

// Held-out batch 15: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 14's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 57/60, decide 24/30, options 11/17, recommendation 14/17. Some of its
// misses led to general rules, driven by train cases in other words (xd155–xd165, xc42–xc44, xf42, xf43, xo72–xo75); its
// floors are its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout15", file: "testdata/eval/batch15_interpret.jsonl",
		min: 59.0 / 60, minOptions: 14.0 / 17, minRecommendation: 16.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout15", file: "testdata/eval/batch15_decide.jsonl", min: 30.0 / 30})
}
