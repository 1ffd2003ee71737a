package bot

import "github.com/orchrun/orch/bot/blocks"

// The buttons orch puts on a question, by the names cmd/orch and the benchmarks click them with: package blocks makes
// and reads them.
const (
	ActionChoose = blocks.ActionChoose
	ActionRetry  = blocks.ActionRetry
	ActionAbort  = blocks.ActionAbort
	ActionAnswer = blocks.ActionAnswer
	ActionPage   = blocks.ActionPage
)

// ActionValue is what a question's button carries (blocks.ActionValue).
type ActionValue = blocks.ActionValue

// DecodeAction reads a click back from a button's action_id and value (blocks.DecodeAction).
func DecodeAction(actionID, value string) (ActionValue, error) {
	return blocks.DecodeAction(actionID, value)
}
