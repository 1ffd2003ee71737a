package brain

// Held-out batch 10: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md).
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout10", file: "testdata/eval/batch10_interpret.jsonl"})
	decideSets = append(decideSets, evalSet{name: "heldout10", file: "testdata/eval/batch10_decide.jsonl"})
}
