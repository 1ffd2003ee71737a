package brain

// Held-out batch 20: endings of agents and tools (60 to interpret, 40 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, its brief a product company's quarter (payments, email,
// support tooling, observability, data), scored after batch 19's rules and before any rule changed for it
// (testdata/eval/README.md): interpret 50/60, decide 31/40, options 16/17, recommendation 16/17. Some of its misses
// led to general rules, driven by train cases in other words (xc63–xc68, xf59–xf61, xd208–xd216); its floors are its
// score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout20", file: "testdata/eval/batch20_interpret.jsonl",
		min: 57.0 / 60, minOptions: 16.0 / 17, minRecommendation: 16.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout20", file: "testdata/eval/batch20_decide.jsonl", min: 38.0 / 40})
}
