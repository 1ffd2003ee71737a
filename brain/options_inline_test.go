package brain

import (
	"reflect"
	"testing"
)

// Alternatives written in a sentence: the labels are the alternatives as written, without the words around them all.
func TestSentenceOptions(t *testing.T) {
	tests := []struct {
		s    string
		want []string
	}{
		// A question whose last clause joins its alternatives with "or".
		{"Should I paginate the export into 10k-row files, or move it to a background job?", []string{"paginate the export into 10k-row files", "move it to a background job"}},
		{"Do you want me to apply it now, or wait until the load test finishes?", []string{"apply it now", "wait until the load test finishes"}},
		{"Should the config file be YAML, TOML, or JSON?", []string{"YAML", "TOML", "JSON"}},
		{"Should I stash them, commit them on a separate branch, or work around them?", []string{"stash them", "commit them on a separate branch", "work around them"}},
		{"Would you like me to use date-fns or dayjs?", []string{"date-fns", "dayjs"}},
		{"Should I keep the cache, or drop it?", []string{"keep the cache", "drop it"}},
		{"Should I proceed with upgrading to React 18 (needs changes in 14 components that use the legacy API), or pin react-dom?", []string{"upgrading to React 18", "pin react-dom"}},
		{"Need a decision: UTC or local time for the daily report cutoff?", []string{"UTC", "local time"}},
		{"Which should I use for the files, S3 or the local volume?", []string{"S3", "the local volume"}},
		{"Which do you prefer for the public IDs: UUIDv7 or ULID?", []string{"UUIDv7", "ULID"}},
		{"Do you want it enabled for everyone at deploy, or left off until they switch it on?", []string{"enabled for everyone at deploy", "left off until they switch it on"}},
		// An indirect question: "whether X or Y".
		{"I'm not sure whether the rate limit should apply per API key or per IP address.", []string{"per API key", "per IP address"}},
		{"Please confirm whether to apply it or to change the upgrade to an in-place one.", []string{"apply it", "change the upgrade to an in-place one"}},
		// Alternatives counted out: what exists, not work done.
		{"The codebase has two notification systems: email via SES (`notify/email.py`) and the in-app inbox.", []string{"email via SES (`notify/email.py`)", "the in-app inbox"}},
		{"I made two changes: added a cache and fixed the test.", nil},
		{"There are three formats: CSV, JSON and Parquet.", []string{"CSV", "JSON", "Parquet"}},
		{"There are three formats: CSV and JSON.", nil},
		// "either X or Y".
		{"I can either put it behind a flag or ship it to everyone. Which?", []string{"put it behind a flag", "ship it to everyone"}},
		// Not options.
		{"Should I also bump the version, or not?", nil},
		{"Can you share it, or point me to where the tiers are defined?", nil},
		{"Is the old hook still registered, or can it be removed?", nil},
		{"1. Should deleted users be soft-deleted or removed?", nil},
		{"Shall I go ahead with the real run?", nil},
		{"The build uses Go or TinyGo depending on the target.", nil},
		{"Does this look right or should the migration run first, given that the table has 40 million rows and no index on the column?", nil},
	}
	for _, tt := range tests {
		if got := optionLabels(sentenceOptions(tt.s)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("sentenceOptions(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// A long alternative is cut at a clause joint to stay a button's text.
func TestSentenceOptionsKeepsLabelsShort(t *testing.T) {
	got := optionLabels(sentenceOptions("Should I upgrade React, or pin react-dom via an overrides entry and only patch the vulnerable transitive dependency?"))
	want := []string{"upgrade React", "pin react-dom via an overrides entry"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Recommendations in other words, and positions resolved to their option.
func TestRecommendationsInOtherWords(t *testing.T) {
	labels := []string{"Keep the cron job", "Move to a queue consumer", "Drop the report"}
	tests := []struct{ sentence, want string }{
		{"My vote is option 2.", "Move to a queue consumer"},
		{"If it were up to me I'd go with the first.", "Keep the cron job"},
		{"If it were up to me, I'd go queue consumer.", "Move to a queue consumer"},
		{"I think the first one is better for a public API.", "Keep the cron job"},
		{"IMO the second is the safer choice.", "Move to a queue consumer"},
		{"Leaning C.", "Drop the report"},
		{"I'm leaning towards the 2nd.", "Move to a queue consumer"},
		{"Option three would be my pick.", "Drop the report"},
		{"I'd probably go with the latter.", "Drop the report"},
		{"My preference is the former.", "Keep the cron job"},
	}
	for _, tt := range tests {
		p := recommendedPhrase(tt.sentence)
		if got, ok := resolveRecommendation(p, labels); !ok || got != tt.want {
			t.Errorf("%q: phrase %q resolved to %q, %v; want %q", tt.sentence, p, got, ok, tt.want)
		}
	}
	for _, s := range []string{"I think the tests are flaky.", "The first one failed.", "Let me know which you prefer."} {
		if p := recommendedPhrase(s); p != "" {
			t.Errorf("recommendedPhrase(%q) = %q, want none", s, p)
		}
	}
}

// Interpretations end to end: the inline options and the recommendation reach the escalation.
func TestInterpretInlineOptions(t *testing.T) {
	in := interpret("The `orders` export times out for big accounts. Should I paginate the export into 10k-row files, or move it to a background job? My vote is the second.")
	if in.Status != StatusNeedsHelp || !reflect.DeepEqual(in.Options, []string{"paginate the export into 10k-row files", "move it to a background job"}) || in.Recommendation != "move it to a background job" {
		t.Errorf("got %s %q %q", in.Status, in.Options, in.Recommendation)
	}
	in = interpret("Done. Changes:\n\n1. `api.go`: validate limit\n2. `api_test.go`: bounds\n\n`go test ./...` passes.")
	if in.Status != StatusCompleted || len(in.Options) != 0 {
		t.Errorf("a finished summary: got %s %q", in.Status, in.Options)
	}
}

func FuzzSentenceOptions(f *testing.F) {
	for _, s := range []string{
		"Should I X, or Y?", "whether to a or to b", "has two things: a and b", "Need a decision: UTC or local time for it?",
		"Which, or?", "whether or", "either or", "Should the (x or y)?", "has three: , and ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, o := range sentenceOptions(s) {
			if o.label == "" {
				t.Errorf("sentenceOptions(%q) gave an empty label", s)
			}
		}
		recommendedPhrase(s)
	})
}
