package blocks

import (
	"errors"
	"strings"
	"testing"
)

func TestActionValueRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		v        ActionValue
		actionID string
		value    string
	}{
		{"choice", ActionValue{"r-abc", "e1", "choose", "A"}, "orch_choose:A", "r-abc|e1|choose|A"},
		{"retry", ActionValue{"r-abc", "e12", "retry", ""}, "orch_retry", "r-abc|e12|retry|"},
		{"abort", ActionValue{"r-7f3kq2m9xa", "e3", "abort", ""}, "orch_abort", "r-7f3kq2m9xa|e3|abort|"},
		{"separator in a key", ActionValue{"r-abc", "e1", "choose", "A|B"}, "orch_choose:A|B", "r-abc|e1|choose|A%7CB"},
		{"percent in ids", ActionValue{"r%1", "e%7C", "choose", "%"}, "orch_choose:%", "r%251|e%257C|choose|%25"},
		{"unicode key", ActionValue{"r-abc", "e1", "choose", "é"}, "orch_choose:é", "r-abc|e1|choose|é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Encode(); got != tt.value {
				t.Errorf("Encode() = %q, want %q", got, tt.value)
			}
			if got := tt.v.ActionID(); got != tt.actionID {
				t.Errorf("ActionID() = %q, want %q", got, tt.actionID)
			}
			got, err := DecodeAction(tt.actionID, tt.value)
			if err != nil {
				t.Fatalf("DecodeAction(%q, %q): %v", tt.actionID, tt.value, err)
			}
			if got != tt.v {
				t.Errorf("DecodeAction(%q, %q) = %+v, want %+v", tt.actionID, tt.value, got, tt.v)
			}
		})
	}
}

func TestEncodeFitsSlack(t *testing.T) {
	// The largest value DecodeAction accepts: every field at its limit, every byte escaped.
	long := strings.Repeat("|", maxActionField)
	v := ActionValue{RunID: long, EscalationID: long, Kind: KindChoose, Key: long}
	if n := len(v.Encode()); n > maxButtonValue {
		t.Errorf("a maximal value is %d bytes; Slack allows %d", n, maxButtonValue)
	}
	if n := len(v.ActionID()); n > maxActionID {
		t.Errorf("a maximal action_id is %d bytes; Slack allows %d", n, maxActionID)
	}
	if _, err := DecodeAction(v.ActionID(), v.Encode()); err != nil {
		t.Errorf("a maximal value does not decode: %v", err)
	}
}

func TestDecodeActionRejects(t *testing.T) {
	tooLong := strings.Repeat("x", maxActionField+1)
	tests := []struct {
		name, actionID, value string
	}{
		{"empty", "", ""},
		{"unknown action id", "other_app_button", "r-abc|e1|choose|A"},
		{"prefix without key", "orch_choose", "r-abc|e1|choose|"},
		{"prefix with empty key", "orch_choose:", "r-abc|e1|choose|"},
		{"key differs from action id", "orch_choose:A", "r-abc|e1|choose|B"},
		{"key differs in case", "orch_choose:a", "r-abc|e1|choose|A"},
		{"kind differs from action id", "orch_retry", "r-abc|e1|abort|"},
		{"retry with a key", "orch_retry", "r-abc|e1|retry|A"},
		{"unknown kind", "orch_retry", "r-abc|e1|resume|"},
		{"too few fields", "orch_retry", "r-abc|e1|retry"},
		{"too many fields", "orch_retry", "r-abc|e1|retry||"},
		{"empty run id", "orch_retry", "|e1|retry|"},
		{"empty escalation id", "orch_abort", "r-abc||abort|"},
		{"run id too long", "orch_retry", tooLong + "|e1|retry|"},
		{"escalation id too long", "orch_retry", "r-abc|" + tooLong + "|retry|"},
		{"key too long", "orch_choose:" + tooLong, "r-abc|e1|choose|" + tooLong},
		{"action id too long", "orch_choose:" + strings.Repeat("A", 300), "r-abc|e1|choose|A"},
		{"value too long", "orch_retry", "r-abc|e1|retry|" + strings.Repeat("x", 2000)},
		{"space in id", "orch_retry", "r abc|e1|retry|"},
		{"newline in key", "orch_choose:A\n", "r-abc|e1|choose|A\n"},
		{"control character", "orch_retry", "r-abc\x00|e1|retry|"},
		{"invalid UTF-8", "orch_retry", "r-\xff|e1|retry|"},
		{"lower-case escape", "orch_choose:|", "r-abc|e1|choose|%7c"},
		{"other escape", "orch_choose:A", "r-abc|e1|choose|%41"},
		{"dangling percent", "orch_choose:%", "r-abc|e1|choose|%"},
		{"JSON value", "orch_retry", `{"run":"r-abc"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := DecodeAction(tt.actionID, tt.value)
			if err == nil {
				t.Fatalf("DecodeAction(%q, %q) = %+v, want an error", tt.actionID, tt.value, v)
			}
			if !errors.Is(err, errBadAction) {
				t.Errorf("error %v does not wrap errBadAction", err)
			}
			if v != (ActionValue{}) {
				t.Errorf("a rejected action returned %+v", v)
			}
		})
	}
}

// FuzzDecodeAction checks that DecodeAction never panics and accepts only canonical pairs: whatever it accepts is
// exactly what orch would have put on the button.
func FuzzDecodeAction(f *testing.F) {
	f.Add("orch_choose:A", "r-abc|e1|choose|A")
	f.Add("orch_retry", "r-abc|e1|retry|")
	f.Add("orch_abort", "r-abc|e1|abort|")
	f.Add("orch_choose:|", "r-abc|e1|choose|%7C")
	f.Add("orch_choose:%", "r%25|e1|choose|%25")
	f.Add("orch_choose:a", "r-abc|e1|choose|%7c")
	f.Add("orch_retry", "r-abc|e1|retry")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, actionID, value string) {
		v, err := DecodeAction(actionID, value)
		if err != nil {
			return
		}
		if got := v.ActionID(); got != actionID {
			t.Errorf("accepted action_id %q, but the value's own is %q", actionID, got)
		}
		if got := v.Encode(); got != value {
			t.Errorf("accepted value %q, but it encodes as %q", value, got)
		}
		if err := checkActionValue(v); err != nil {
			t.Errorf("accepted %+v, which is not a valid action: %v", v, err)
		}
	})
}
