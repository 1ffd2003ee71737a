package brain

// The decide batch: histories written from real tools' documented error formats across a dozen ecosystems, to
// measure the retry/escalate judgement on text it was not written from.
func init() {
	decideSets = append(decideSets, evalSet{name: "batch_decide", file: "testdata/eval/batch_decide.jsonl", min: 1})
}
