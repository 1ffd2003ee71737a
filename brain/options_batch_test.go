package brain

// The options batch: questions as coding agents put them (markdown lists and tables, headings, prose, Claude Code's
// selection box) and finished work whose lists are not options, to measure option and recommendation extraction
// on text it was not written from.
func init() {
	interpretSets = append(interpretSets, evalSet{name: "batch_options", file: "testdata/eval/batch_options.jsonl", min: 1, minOptions: 1, minRecommendation: 1})
}
