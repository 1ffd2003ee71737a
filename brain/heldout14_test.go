package brain

// Held-out batch 14: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored after batch 13's rules and before any rule changed for
// it (testdata/eval/README.md): interpret 49/60, decide 19/30, options 13/17, recommendation 16/17. Some of its
// misses led to general rules, driven by train cases in other words (xd147–xd154, xc38–xc41, xf39–xf41, xn39); its
// floors are its score after them, raised as later rules read more of it right (testdata/eval/README.md).
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout14", file: "testdata/eval/batch14_interpret.jsonl",
		min: 58.0 / 60, minOptions: 15.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout14", file: "testdata/eval/batch14_decide.jsonl", min: 27.0 / 30})
}
