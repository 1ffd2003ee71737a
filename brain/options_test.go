package brain

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"lettered on lines", "A) Redis (distributed, persistent)\nB) In-memory (fast, local only)\nC) File-based (simple, persistent)",
			[]string{"Redis (distributed, persistent)", "In-memory (fast, local only)", "File-based (simple, persistent)"}},
		{"lettered on one line", "A) Redis  B) In-memory  C) File-based", []string{"Redis", "In-memory", "File-based"}},
		{"lettered with dots", "A. Keep the column\nB. Drop it", []string{"Keep the column", "Drop it"}},
		{"lettered with dots on one line", "A. Keep the column B. Drop it", []string{"Keep the column", "Drop it"}},
		{"bracketed", "[A] Approve\n[B] Reject\n[C] Ask the author", []string{"Approve", "Reject", "Ask the author"}},
		{"parenthesised", "(a) stdout (b) a rotating file", []string{"stdout", "a rotating file"}},
		{"option prefix in bold", "**Option A:** Redis\n**Option B:** Postgres", []string{"Redis", "Postgres"}},
		{"numbered with dots", "1. Yes, reuse the session middleware\n2. No, it is public", []string{"Yes, reuse the session middleware", "No, it is public"}},
		{"numbered with parens", "1) Offset/limit\n2) Cursor-based\n3) Keyset", []string{"Offset/limit", "Cursor-based", "Keyset"}},
		{"dash bullets", "- Redis, which we already run\n- Postgres", []string{"Redis, which we already run", "Postgres"}},
		{"star bullets with continuation", "* Google Workspace SSO\n  (the team already uses it)\n* GitHub OAuth", []string{"Google Workspace SSO (the team already uses it)", "GitHub OAuth"}},
		{"bullets carrying letter keys", "- A) Redis\n- B) In-memory", []string{"Redis", "In-memory"}},
		{"wrapped lettered option", "A) Redis: distributed and\n   persistent\nB) In-memory", []string{"Redis: distributed and persistent", "In-memory"}},
		{"letters out of order are text", "A) Use plan B. It is simpler\nB) Keep plan A", []string{"Use plan B. It is simpler", "Keep plan A"}},
		{"decimal is not a key", "1. Pin to v1.2. It works\n2. Upgrade", []string{"Pin to v1.2. It works", "Upgrade"}},
		{"inline list ends with its sentence", "Logs can go to A) stdout  B) a file. I'd pick A.", []string{"stdout", "a file"}},
		{"blank lines between options", "A) Redis\n\nB) In-memory", []string{"Redis", "In-memory"}},
		{"bold name is the label", "1. **Per-seat**: charge per member\n2. **Flat fee**: one price", []string{"Per-seat", "Flat fee"}},
		{"bold name with the colon inside", "- **Nightly:** cheap, a day stale\n- **Streaming:** fresh, more moving parts", []string{"Nightly", "Streaming"}},
		{"plain name and description stay whole", "- Weekly: small diffs\n- Monthly: fewer PRs", []string{"Weekly: small diffs", "Monthly: fewer PRs"}},
		{"dash description stays whole", "**A.** Keep the shim — zero risk\n**B.** Upgrade — needs QA", []string{"Keep the shim — zero risk", "Upgrade — needs QA"}},
		{"emphasis inside a label", "- Use **Redis** streams\n- Use a `__private__` table", []string{"Use Redis streams", "Use a `__private__` table"}},
		{"recommended marker dropped", "1. Pin the digest (Recommended)\n2. Switch images", []string{"Pin the digest", "Switch images"}},
		{"dash recommended marker dropped", "- Daily snapshots\n- WAL archiving — recommended", []string{"Daily snapshots", "WAL archiving"}},
		{"inline lower case joined by or", "Should it be (a) cached for an hour, (b) cached per deploy, or (c) never cached? I'd pick b.", []string{"cached for an hour", "cached per deploy", "never cached"}},
		{"inline option with a clause of its own", "I can (a) pause it now, which delays 300 mails, or (b) let it drain.", []string{"pause it now, which delays 300 mails", "let it drain"}},
		{"table names the alternative", "| Option | Pros |\n|---|---|\n| **R2** | no egress |\n| B2 (Recommended) | cheap |", []string{"R2", "B2"}},
		{"table with a number column", "| # | Strategy | Risk |\n|---|---|---|\n| 1 | Blue-green | low |\n| 2 | Canary | lowest |", []string{"Blue-green", "Canary"}},
		{"a table needs its separator row", "| a | b |\n| c | d |", nil},
		{"no options", "Redis or in-memory, your call", nil},
		{"empty", "   ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseOptions(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseOptions(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestParseOptionsMarksTheRecommended(t *testing.T) {
	for _, text := range []string{
		"1. Pin the digest\n2. Switch images (Recommended)",
		"- Pin the digest\n- **Switch images** [recommended]",
		"| Plan | Effect |\n|---|---|\n| Pin the digest | none |\n| Switch images (recommended) | smaller |",
	} {
		got := parseOptions(text)
		want := []choice{{label: "Pin the digest"}, {label: "Switch images", recommended: true}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseOptions(%q) = %+v, want %+v", text, got, want)
		}
	}
}

func TestResolveRecommendation(t *testing.T) {
	labels := []string{"Keep Python 3.8 support and add a shim", "Drop 3.8 and bump `requires-python`", "Merge main in"}
	tests := []struct {
		phrase string
		want   string // "" for none
	}{
		{"B", labels[1]},
		{"b; it is simpler", labels[1]},
		{"(c) since others pushed", labels[2]},
		{"option 2.", labels[1]},
		{"#3 given the history", labels[2]},
		{"C, because", labels[2]},
		{"A for now, with a ticket", labels[0]},
		{"the first one — it is safer", labels[0]},
		{"the second option", labels[1]},
		{"the last one", labels[2]},
		{"dropping 3.8; nobody uses it", labels[1]},
		{"merging, since two people share the branch", labels[2]},
		{"going with merge main in", labels[2]},
		{"Merge main in — no force-push", labels[2]},
		{"D", ""},                         // no fourth option
		{"a smaller change first", ""},    // the article, not option a
		{"3.8 and a shim", labels[0]},     // more words of the first
		{"we talk about it tomorrow", ""}, // names no option
	}
	for _, tt := range tests {
		got, ok := resolveRecommendation(tt.phrase, labels)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("resolveRecommendation(%q) = %q, %v; want %q", tt.phrase, got, ok, tt.want)
		}
	}
	// A label inside another word is not named: "npm workspaces" is not in "pnpm workspaces".
	if got, _ := resolveRecommendation("pnpm workspaces, since the lockfiles are pnpm's", []string{"npm workspaces", "pnpm workspaces"}); got != "pnpm workspaces" {
		t.Errorf("got %q, want pnpm workspaces", got)
	}
	// Part of one label: "R2" names "Cloudflare R2".
	if got, _ := resolveRecommendation("R2, because egress dominates", []string{"Cloudflare R2", "Backblaze B2"}); got != "Cloudflare R2" {
		t.Errorf("got %q, want Cloudflare R2", got)
	}
}

func TestRecommendedPhrase(t *testing.T) {
	tests := map[string]string{
		"Recommendation: B.":                          "B",
		"**Recommendation:** B — clients can tell.":   "B — clients can tell",
		"My recommendation is option 2.":              "option 2",
		"RECOMMENDATION: A (matches the LICENSE)":     "A (matches the LICENSE)",
		"I'd lean toward REST, since partners use it": "REST, since partners use it",
		"I suggest dropping IE11.":                    "dropping IE11",
		"Which would you recommend?":                  "",
	}
	for s, want := range tests {
		if got := recommendedPhrase(s); got != want {
			t.Errorf("recommendedPhrase(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestEitherOrOptions(t *testing.T) {
	tests := []struct {
		s    string
		want []string
	}{
		{"Should it be either GraphQL or REST?", []string{"GraphQL", "REST"}},
		{"Pick either the Terraform module or the Helm chart before I continue.", []string{"the Terraform module", "the Helm chart"}},
		{"I could use either an atomic counter or a mutex — which one?", []string{"an atomic counter", "a mutex"}},
		{"That needs either a unique index or a check in the transaction. Which?", []string{"a unique index", "a check in the transaction"}},
		{"It could go either way.", nil},
		{"Either of them works.", nil},
	}
	for _, tt := range tests {
		if got := optionLabels(eitherOrOptions(tt.s)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("eitherOrOptions(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestAskUserQuestion(t *testing.T) {
	call := `{"type":"tool_use","id":"t1","name":"AskUserQuestion","input":{"questions":[{"question":"Which processor?","header":"Pay","options":[{"label":"Stripe","description":"docs"},{"label":"Paddle (Recommended)","description":"VAT"}],"multiSelect":false},{"question":"Strict mode?","header":"TS","options":[{"label":"Yes"},{"label":"No"}]}]}}`
	tests := []struct {
		name, text string
	}{
		{"own line after prose", "I need one decision first.\n\n" + call},
		{"inside a stream-json message", `{"type":"assistant","message":{"content":[{"type":"text","text":"Two questions:"},` + call + `]},"session_id":"s"}`},
		{"pretty-printed in a fence", "```json\n{\n  \"questions\": [\n    {\"question\": \"Which processor?\", \"options\": [{\"label\": \"Stripe\"}, {\"label\": \"Paddle (Recommended)\"}]}\n  ]\n}\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, opts, ok := askUserQuestion(tt.text)
			want := []choice{{label: "Stripe"}, {label: "Paddle", recommended: true}}
			if !ok || q != "Which processor?" || !reflect.DeepEqual(opts, want) {
				t.Errorf("askUserQuestion = %q, %+v, %v", q, opts, ok)
			}
			in := interpret(tt.text)
			if in.Status != StatusNeedsHelp || in.Question != "Which processor?" || in.Recommendation != "Paddle" ||
				!reflect.DeepEqual(in.Options, []string{"Stripe", "Paddle"}) {
				t.Errorf("interpret = %+v", in)
			}
		})
	}
	// A transcript: the first call was answered (its result carries the answers), the second is pending.
	answered := `{"toolUseResult":{"questions":[{"question":"Old?","options":[{"label":"Yes"},{"label":"No"}]}],"answers":{"Old?":"Yes"}}}`
	pending := `{"type":"tool_use","name":"AskUserQuestion","input":{"questions":[{"question":"New?","options":[{"label":"Left"},{"label":"Right"}]}]}}`
	if q, opts, ok := askUserQuestion(pending + "\n" + answered); !ok || q != "New?" || len(opts) != 2 || opts[0].label != "Left" {
		t.Errorf("pending then answered: %q %+v %v", q, opts, ok)
	}
	if q, _, ok := askUserQuestion(strings.Repeat(`{"questions": [`, 5000) + pending); !ok || q != "New?" {
		t.Errorf("after many broken keys: %q %v", q, ok)
	}
	// The search is bounded: behind thousands of broken keys it gives up rather than decode each.
	if _, _, ok := askUserQuestion(pending + strings.Repeat(`{"questions": [`, 5000)); ok {
		t.Error("found a call behind 5000 broken keys; the search should have given up")
	}
	for _, text := range []string{`{"questions": []}`, `{"questions": [{"question": "Why?"}]}`, `"questions" {`, `the questions are open`} {
		if _, _, ok := askUserQuestion(text); ok {
			t.Errorf("askUserQuestion(%q) found a question", text)
		}
	}
}

// TestInterpretOptions pins where the heuristic looks for the options of a question.
func TestInterpretOptions(t *testing.T) {
	tests := []struct {
		name, output string
		options      []string
		rec          string
	}{
		{"the list after the question, not the findings before it",
			"Findings:\n\n1. Slow query\n2. No index\n\nHow should I proceed?\n\n1. Add the index\n2. Rewrite the query\n\nMy recommendation: option 1.",
			[]string{"Add the index", "Rewrite the query"}, "Add the index"},
		{"a paragraph between the question and the list",
			"Which rounding should I use?\n\nThe spec is silent and the modes differ on 2% of cases.\n\n- Half up\n- Half even\n\nI'd suggest the second one.",
			[]string{"Half up", "Half even"}, "Half even"},
		{"an offer introducing a list",
			"The release is built.\n\nWould you like me to:\n1. Publish now\n2. Wait for QA\n\nI recommend 2.",
			[]string{"Publish now", "Wait for QA"}, "Wait for QA"},
		{"a yes/no question takes no plan",
			"Is it fine to rename the column? I'll wait.\n\nThen I would:\n- backfill\n- switch the ORM",
			nil, ""},
		{"a yes/no question after findings",
			"I checked the failures:\n\n1. Two timeouts\n2. One flaky diff\n\nShould I open a ticket with the vendor?",
			nil, ""},
		{"a list before the question",
			"I paused here.\n\n- Keep the endpoint\n- Remove the endpoint\n\nI recommend the first option. Which do you prefer?",
			[]string{"Keep the endpoint", "Remove the endpoint"}, "Keep the endpoint"},
		{"a table of alternatives",
			"Which queue should I use?\n\n| # | Queue | Cost |\n|---|---|---|\n| 1 | SQS | low |\n| 2 | Kafka | high |\n\nI'd suggest #1.",
			[]string{"SQS", "Kafka"}, "SQS"},
		{"inline lower-case options in the question",
			"Should I (a) regenerate the client, or (b) patch it by hand?",
			[]string{"regenerate the client", "patch it by hand"}, ""},
		{"either or with a recommendation",
			"It needs either a cron job or a trigger. My recommendation: a cron job, because triggers are opaque. Which should I do?",
			[]string{"a cron job", "a trigger"}, "a cron job"},
		{"a recommendation that names no option",
			"Should the cache expire after an hour or a day? I'd suggest asking the data team first.",
			[]string{"an hour", "a day"}, "asking the data team first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := interpret(tt.output)
			if in.Status != StatusNeedsHelp {
				t.Fatalf("status %s, want needs_help", in.Status)
			}
			if !reflect.DeepEqual(in.Options, tt.options) || in.Recommendation != tt.rec {
				t.Errorf("options %q, recommendation %q; want %q, %q", in.Options, in.Recommendation, tt.options, tt.rec)
			}
		})
	}
}

func TestExplicitMarkersOnOneLine(t *testing.T) {
	tests := []struct {
		name, output string
		want         Interpretation
	}{
		{"question options and recommendation", "QUESTION: Which currency? OPTIONS: A) Euro B) US dollar RECOMMENDATION: B (what invoices use)",
			Interpretation{Status: StatusNeedsHelp, Question: "Which currency?", Options: []string{"Euro", "US dollar"}, Recommendation: "US dollar"}},
		{"status first, after prose", "Rebased.\nSTATUS: needs_human QUESTION: What now? OPTIONS: A) Skip it B) Retry RECOMMENDATION: A",
			Interpretation{Status: StatusNeedsHelp, Question: "What now?", Options: []string{"Skip it", "Retry"}, Recommendation: "Skip it"}},
		{"a recommendation naming no option stays as written", "QUESTION: Which? OPTIONS: A) X B) Y RECOMMENDATION: ask the owner",
			Interpretation{Status: StatusNeedsHelp, Question: "Which?", Options: []string{"X", "Y"}, Recommendation: "ask the owner"}},
		{"prose keys in lower case do not split", "QUESTION: Should the options: flag stay?",
			Interpretation{Status: StatusNeedsHelp, Question: "Should the options: flag stay?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ExplicitMarkers(tt.output)
			if !ok {
				t.Fatal("no markers found")
			}
			got.Summary, got.Via = "", ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
