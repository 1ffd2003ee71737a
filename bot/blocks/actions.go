package blocks

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Action ids of the buttons orch puts on an escalation. A choice carries its option key: "orch_choose:A".
const (
	ActionChoose = "orch_choose"
	ActionRetry  = "orch_retry"
	ActionAbort  = "orch_abort"
	// ActionAnswer opens a form (a modal) to answer in words, or by an option from a list.
	ActionAnswer = "orch_answer"
	// ActionPage is the link to a run's page in the web view. It answers nothing: Slack opens the link, and sends
	// the click all the same, which is acknowledged and otherwise ignored.
	ActionPage = "orch_page"
)

// Kinds of ActionValue.
const (
	KindChoose = "choose"
	KindRetry  = "retry"
	KindAbort  = "abort"
	KindAnswer = "answer"
)

// Limits of what a button carries. Slack allows 255 characters of action_id and 2000 of value; orch's own ids are far
// shorter, so anything near Slack's limits is not a button orch made.
const (
	maxActionID    = 255
	maxButtonValue = 2000
	maxActionField = 64 // a run id, an escalation id or an option key
)

// errBadAction is what every rejected click wraps.
var errBadAction = errors.New("not an orch action")

// ActionValue is what an escalation button carries: which run and escalation it answers and how. It is only a claim:
// whoever acts on a click checks it against the stored escalation.
type ActionValue struct {
	RunID        string
	EscalationID string
	Kind         string // "choose", "retry", "abort" or "answer"
	Key          string // the option key of a choice; empty otherwise
}

// Encode packs v into a button value: the four fields joined by "|", in the order run, escalation, kind, key
// ("r-abc|e1|choose|A", "r-abc|e1|retry|"). A "%" or "|" inside a field is written "%25" or "%7C", so every field
// round-trips; nothing else is escaped, so a value stays readable in logs. The encoding is canonical: DecodeAction
// accepts exactly one value for each ActionValue.
func (v ActionValue) Encode() string {
	return strings.Join([]string{escapeField(v.RunID), escapeField(v.EscalationID), escapeField(v.Kind),
		escapeField(v.Key)}, "|")
}

// ActionID is the action_id of v's button ("" for a kind orch does not know).
func (v ActionValue) ActionID() string {
	switch v.Kind {
	case KindChoose:
		return ActionChoose + ":" + v.Key
	case KindRetry:
		return ActionRetry
	case KindAbort:
		return ActionAbort
	case KindAnswer:
		return ActionAnswer
	}
	return ""
}

// DecodeAction reads a click back from a button's action_id and value. It is strict: an action id orch does not make,
// a value that is not canonical Encode output, a kind that disagrees with the action id, an empty or over-long id or
// key, whitespace or control characters: each is an error. The result still names only what the button claims.
func DecodeAction(actionID, value string) (ActionValue, error) {
	if len(actionID) > maxActionID {
		return ActionValue{}, fmt.Errorf("%w: action_id is %d bytes long", errBadAction, len(actionID))
	}
	if len(value) > maxButtonValue {
		return ActionValue{}, fmt.Errorf("%w: value is %d bytes long", errBadAction, len(value))
	}
	if !utf8.ValidString(actionID) || !utf8.ValidString(value) {
		return ActionValue{}, fmt.Errorf("%w: not valid UTF-8", errBadAction)
	}
	parts := strings.Split(value, "|")
	if len(parts) != 4 {
		return ActionValue{}, fmt.Errorf("%w: value %q has %d fields, want 4", errBadAction, value, len(parts))
	}
	fields := make([]string, len(parts))
	for i, p := range parts {
		f, err := unescapeField(p)
		if err != nil {
			return ActionValue{}, fmt.Errorf("%w: value %q: %v", errBadAction, value, err)
		}
		fields[i] = f
	}
	v := ActionValue{RunID: fields[0], EscalationID: fields[1], Kind: fields[2], Key: fields[3]}
	if err := checkActionValue(v); err != nil {
		return ActionValue{}, fmt.Errorf("%w: %v", errBadAction, err)
	}
	if want := v.ActionID(); actionID != want {
		return ActionValue{}, fmt.Errorf("%w: action_id %q does not match value %q", errBadAction, actionID, value)
	}
	return v, nil
}

// checkActionValue says whether v can be a button DecodeAction reads back.
func checkActionValue(v ActionValue) error {
	if err := checkActionField("run id", v.RunID); err != nil {
		return err
	}
	if err := checkActionField("escalation id", v.EscalationID); err != nil {
		return err
	}
	switch v.Kind {
	case KindChoose:
		return checkActionField("option key", v.Key)
	case KindRetry, KindAbort, KindAnswer:
		if v.Key != "" {
			return fmt.Errorf("a %s carries no option key", v.Kind)
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q", v.Kind)
}

func checkActionField(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s", what)
	case len(s) > maxActionField:
		return fmt.Errorf("%s is %d bytes long (at most %d)", what, len(s), maxActionField)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%s %q holds a space or control character", what, s)
		}
	}
	return nil
}

var fieldEscaper = strings.NewReplacer("%", "%25", "|", "%7C")

func escapeField(s string) string { return fieldEscaper.Replace(s) }

// unescapeField undoes escapeField and accepts nothing else: "%7c" or "%41" would make a second spelling of one value.
func unescapeField(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(s[i:], "%7C"):
			b.WriteByte('|')
		default:
			return "", fmt.Errorf("bad escape at byte %d", i)
		}
		i += 2
	}
	return b.String(), nil
}
