package brain

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestInterpretationJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Interpretation
		json string
	}{
		{
			name: "empty values are null and every key is present",
			in:   Interpretation{Status: StatusCompleted, Summary: "done", Options: []string{}, Via: "heuristic"},
			json: `{"status":"completed","summary":"done","error":null,"question":null,"options":null,"recommendation":null}`,
		},
		{
			name: "all set",
			in: Interpretation{Status: StatusNeedsHelp, Summary: "s", Error: "e", Question: "q?",
				Options: []string{"Redis", "In-memory"}, Recommendation: "B for simplicity"},
			json: `{"status":"needs_help","summary":"s","error":"e","question":"q?","options":["Redis","In-memory"],"recommendation":"B for simplicity"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("Marshal = %s\nwant      %s", b, tt.json)
			}
			var back Interpretation
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want := tt.in
			want.Via = "" // not marshalled
			if len(want.Options) == 0 {
				want.Options = nil
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip = %#v, want %#v", back, want)
			}
		})
	}
}

func TestInterpretationUnmarshalLenient(t *testing.T) {
	tests := []struct {
		name string
		json string
		want Interpretation
	}{
		{"nulls", `{"status":"failed","summary":null,"error":"boom","question":null,"options":null,"recommendation":null}`,
			Interpretation{Status: StatusFailed, Error: "boom"}},
		{"missing keys and extra ones", `{"status":"completed","confidence":0.9}`, Interpretation{Status: StatusCompleted}},
		{"empty options", `{"status":"needs_help","question":"q","options":[]}`, Interpretation{Status: StatusNeedsHelp, Question: "q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Interpretation
			if err := json.Unmarshal([]byte(tt.json), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`{"status":1}`, `{"options":"A"}`, `[`} {
		var in Interpretation
		if err := json.Unmarshal([]byte(bad), &in); err == nil {
			t.Errorf("Unmarshal(%s): want an error", bad)
		}
	}
}

func TestDecisionJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Decision
		json string
	}{
		{"escalate has null guidance", Decision{Decision: Escalate, Reason: "loop", Similarity: 0.9, Permanent: true},
			`{"decision":"escalate","reason":"loop","guidance_for_retry":null}`},
		{"retry", Decision{Decision: Retry, Reason: "fixable", GuidanceForRetry: "install pandas"},
			`{"decision":"retry","reason":"fixable","guidance_for_retry":"install pandas"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("Marshal = %s\nwant      %s", b, tt.json)
			}
			var back Decision
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want := Decision{Decision: tt.in.Decision, Reason: tt.in.Reason, GuidanceForRetry: tt.in.GuidanceForRetry}
			if back != want {
				t.Errorf("round trip = %#v, want %#v", back, want)
			}
		})
	}
	var d Decision
	if err := json.Unmarshal([]byte(`{"decision":"retry","reason":null,"guidance_for_retry":null}`), &d); err != nil || d.Decision != Retry {
		t.Errorf("nulls: got %#v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`{"decision":true}`), &d); err == nil {
		t.Error("want an error for a non-string decision")
	}
}

func TestDecideInputJSON(t *testing.T) {
	in := DecideInput{TaskID: "1.1", TaskTitle: "Create data model", AttemptHistory: []string{"a", "b"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"task_id":"1.1","task_title":"Create data model","attempt_history":["a","b"]}`
	if string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var back DecideInput
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, in) {
		t.Errorf("round trip = %#v, %v", back, err)
	}
}
