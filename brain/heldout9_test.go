package brain

// Held-out batch 9: endings of agents and tools (60 to interpret, 30 histories to decide) written by someone who had
// read neither the brain's code nor its earlier cases, scored once before any rule changed for it
// (testdata/eval/README.md).
func init() {
	interpretSets = append(interpretSets, evalSet{name: "heldout9", file: "testdata/eval/batch9_interpret.jsonl"})
	decideSets = append(decideSets, evalSet{name: "heldout9", file: "testdata/eval/batch9_decide.jsonl"})
}
