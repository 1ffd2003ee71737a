package brain

// Held-out batch 19: endings of agents and tools (60 to interpret, 40 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, its brief favouring tools the earlier batches saw little
// (firmware, ML, mobile release, registries, policy-as-code), scored after batch 18's rules and before any rule
// changed for it (testdata/eval/README.md): interpret 51/60, decide 28/40, options 15/17, recommendation 13/17. Some
// of its misses led to general rules, driven by train cases in other words (xd196–xd207, xc55–xc62, xf58, xo91–xo95);
// its floors are its score after them.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout19", file: "testdata/eval/batch19_interpret.jsonl",
		min: 59.0 / 60, minOptions: 17.0 / 17, minRecommendation: 17.0 / 17})
	decideSets = append(decideSets, evalSet{name: "heldout19", file: "testdata/eval/batch19_decide.jsonl", min: 39.0 / 40})
}
