package brain

// Held-out batch 14: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 13's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 49/60, decide 19/30, options 13/17, recommendation 16/17. Its floors are
// that first score.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout14", file: "testdata/eval/batch14_interpret.jsonl",
		min: 49.0 / 60, minOptions: 13.0 / 17, minRecommendation: 16.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout14", file: "testdata/eval/batch14_decide.jsonl", min: 19.0 / 30})
}
