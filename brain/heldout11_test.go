package brain

// Held-out batch 11: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md). Its floors are its first score: no rule has been changed for it yet.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout11", file: "testdata/eval/batch11_interpret.jsonl"})
	decideSets = append(decideSets, evalSet{name: "heldout11", file: "testdata/eval/batch11_decide.jsonl"})
}
