package pipeline

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestEvalCondition(t *testing.T) {
	o := Outcome{
		Status:         StatusSuccess,
		preferredLabel: "Fix",
		ContextUpdates: map[string]string{"context.fresh": "new", "tests_passed": "true"},
	}
	ctx := map[string]string{
		"context.loop_state":  "running",
		"critic_verdict":      "sufficient",
		"human.gate.selected": "A",
		"empty":               "",
		"tests_passed":        "false", // the outcome's update wins
		"spaced":              "two words",
	}
	tests := []struct {
		expr string
		want bool
	}{
		{"", true},
		{"   ", true},
		{"outcome=success", true},
		{"outcome = success", true},
		{"outcome=fail", false},
		{"outcome!=success", false},
		{"outcome!=fail", true},
		{"preferred_label=Fix", true},
		{"preferred_label=fix", false}, // exact, case-sensitive
		{`preferred_label="Fix"`, true},
		{"preferred_label!=Approve", true},
		{"context.loop_state=running", true},        // stored with its prefix
		{"context.critic_verdict=sufficient", true}, // stored without it
		{"context.human.gate.selected=A", true},     // dotted path
		{`context.missing=""`, true},                // missing is empty
		{"context.missing!=x", true},                // missing is never equal to a non-empty value
		{"context.missing=x", false},                //
		{`context.empty=""`, true},                  //
		{"context.fresh=new", true},                 // the outcome's own context updates count
		{"context.tests_passed=true", true},         // and win over ctx
		{`context.spaced="two words"`, true},        // quoted values keep blanks
		{`context.spaced="two\"words"`, false},      // escapes
		{"outcome=success && context.tests_passed=true", true},
		{"outcome=success&&context.tests_passed=false", false},
		{"outcome=success && preferred_label=Fix && context.loop_state!=exhausted", true},
		{"outcome=fail && context.loop_state=running", false},
		{"context.n=3", false},
		{"context.n!=-3", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := evalCondition(tt.expr, o, ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if err := checkCondition(tt.expr); err != nil {
				t.Errorf("checkCondition: %v", err)
			}
		})
	}

	// Every status, each way round; a status reported in capitals still matches.
	for _, s := range statuses {
		for _, reported := range []string{s, strings.ToUpper(s)} {
			ok, err := evalCondition("outcome="+s, Outcome{Status: reported}, nil)
			if err != nil || !ok {
				t.Errorf("outcome=%s with status %q: %v, %v", s, reported, ok, err)
			}
		}
	}
}

func TestParseConditionErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"outcome", "outcome has no operator"},
		{"context.flag", "context.flag has no operator"},
		{"outcome=", "missing value"},
		{"outcome=success &&", "nothing after &&"},
		{"&& outcome=success", "empty clause before &&"},
		{"outcome=success && && outcome=fail", "empty clause before &&"},
		{"outcome==success", "'==' is not an operator"},
		{"outcome=success || outcome=fail", "'||' is not supported"},
		{"outcome=failure", `outcome is never "failure"`},
		{"outcome=SUCCESS", `outcome is never "SUCCESS"`},
		{"status=success", `unknown key "status": use outcome, preferred_label or context.status`},
		{"tests_passed=true", `unknown key "tests_passed"`},
		{"context.=x", `"context." is not a context key`},
		{"context.a..b=x", `"context.a..b" is not a context key`},
		{"preferred_label=Fix issues", `unexpected "issues"`},
		{`preferred_label="Fix`, "unterminated quoted value"},
		{"context.n>3", "expected = or != after context.n"},
		{"NOT outcome=success", `unknown key "NOT"`},
		{"outcome=success contains x", `unexpected "contains x"`},
		{"(outcome=success)", "expected a key"},
		{"outcome=!x", "expected a value"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			err := checkCondition(tt.expr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "condition "+`"`) {
				t.Errorf("error %q does not quote the condition", err)
			}
			if ok, err2 := evalCondition(tt.expr, Outcome{Status: StatusSuccess}, nil); err2 == nil || ok {
				t.Errorf("evalCondition = %v, %v; want the parse error", ok, err2)
			}
		})
	}
}

func FuzzEvalCondition(f *testing.F) {
	// Seeds: every condition in the fixtures, and the forms the tests use.
	cond := regexp.MustCompile(`condition="([^"]*)"`)
	for _, path := range dotFixtures(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, m := range cond.FindAllStringSubmatch(string(src), -1) {
			f.Add(m[1], StatusSuccess, "", "v")
		}
	}
	for _, s := range []string{"", "\f", "outcome!=fail && context.x=\"a b\"", "preferred_label=[A] x", "context.a.b=1&&", "outcome==x||y"} {
		f.Add(s, StatusFail, "Fix", "")
	}
	f.Fuzz(func(t *testing.T, expr, status, label, value string) {
		o := Outcome{Status: status, preferredLabel: label, ContextUpdates: map[string]string{"x": value}}
		ok, err := evalCondition(expr, o, map[string]string{"context.y": value})
		if perr := checkCondition(expr); (perr == nil) != (err == nil) {
			t.Fatalf("checkCondition %v but EvalCondition %v", perr, err)
		}
		if err != nil && ok {
			t.Fatal("an error must come with false")
		}
		if strings.TrimSpace(expr) == "" && (!ok || err != nil) {
			t.Fatal("an empty condition must hold")
		}
	})
}
