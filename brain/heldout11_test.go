package brain

// Held-out batch 11: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 10's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 58/60, decide 23/30, options 13/17, recommendation 13/17. No rule has been
// changed for it yet: its floors are that first score.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout11", file: "testdata/eval/batch11_interpret.jsonl",
		min: 58.0 / 60, minOptions: 13.0 / 17, minRecommendation: 13.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout11", file: "testdata/eval/batch11_decide.jsonl", min: 23.0 / 30})
}
