package brain

// Held-out batch 18: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 17's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 54/60, decide 23/30, options 14/17, recommendation 15/17. Some of its
// misses led to general rules, driven by train cases in other words (xd188–xd195, xf53–xf57, xc53, xc54, xn48,
// xo89, xo90); its floors are its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout18", file: "testdata/eval/batch18_interpret.jsonl",
		min: 60.0 / 60, minOptions: 15.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout18", file: "testdata/eval/batch18_decide.jsonl", min: 30.0 / 30})
}
