package brain

// Held-out batch 12: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 11's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 55/60, decide 22/30, options 14/17, recommendation 15/17. Its misses then
// led to general rules, each driven by train cases in other words (xd123–xd134, xc32–xc35, xf36, xn36, xn37,
// xo67–xo69); its floors are its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout12", file: "testdata/eval/batch12_interpret.jsonl",
		min: 60.0 / 60, minOptions: 16.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout12", file: "testdata/eval/batch12_decide.jsonl", min: 30.0 / 30})
}
