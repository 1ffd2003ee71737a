package brain

// Held-out batch 16: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 15's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 55/60, decide 23/30, options 15/17, recommendation 15/17. Some of its
// misses led to general rules, driven by train cases in other words (xd166–xd172, xo76–xo78, xc46, xf45–xf47); its floors are its
// score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout16", file: "testdata/eval/batch16_interpret.jsonl",
		min: 60.0 / 60, minOptions: 17.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout16", file: "testdata/eval/batch16_decide.jsonl", min: 28.0 / 30})
}
