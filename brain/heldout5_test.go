package brain

// Held-out batch 5: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md). Its floors are that first score, raised as general rules raise it.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout5", file: "testdata/eval/batch5_interpret.jsonl",
		min: 53.0 / 60, minOptions: 14.0 / 20, minRecommendation: 15.0 / 20})
	decideSets = append(decideSets, evalSet{name: "heldout5", file: "testdata/eval/batch5_decide.jsonl", min: 24.0 / 30})
}
