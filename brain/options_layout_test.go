package brain

import (
	"reflect"
	"testing"
)

// The options of a question read from a whole output, whatever the layout the agent chose for them: headings or
// bold lead-ins, a drawn selection, a list set apart from the question by a recommendation, and none at all for a
// yes/no question whose nearby lists are not choices.
func TestOptionsLayout(t *testing.T) {
	tests := []struct {
		name, output string
		want         []string
		rec          string
	}{
		// Options as headings or bold lead-ins, with what is said about each under it.
		{"approach headings with a pros line and bullets",
			"I profiled the export and there are two ways to make it fit in memory.\n\n" +
				"## Approach 1 — Stream rows to the CSV writer\nPros:\n- constant memory\n- no new dependency\n\n" +
				"## Approach 2 — Chunk the query by id range\nCons:\n- ten times the queries\n\n" +
				"Which direction do you want?",
			[]string{"Stream rows to the CSV writer", "Chunk the query by id range"}, ""},
		{"bold lettered titles with a paragraph each",
			"**A) Keep the monolith**\nLower risk; the deploy stays as it is.\n\n" +
				"**B) Extract the billing service**\nCleaner boundaries, but a second pipeline to run.\n\n" +
				"I lean towards B. Which should I pursue?",
			[]string{"Keep the monolith", "Extract the billing service"}, "Extract the billing service"},
		{"alternatives as ordinal paragraphs",
			"The webhook handler times out on large payloads.\n\n" +
				"First approach: move the work to a background job and answer 202 at once.\n\n" +
				"Second approach: raise the proxy timeout to 120 seconds.\n\n" +
				"Which one should I implement?",
			[]string{"move the work to a background job and answer 202 at once", "raise the proxy timeout to 120 seconds"}, ""},
		{"option headings with an em dash and unindented pros and cons",
			"### Option 1 — Soft delete\n- keeps history\n- every query needs a filter\n\n" +
				"### Option 2 — Archive table\n- queries stay simple\n\n" +
				"How would you like to handle deleted projects?",
			[]string{"Soft delete", "Archive table"}, ""},

		{"headings keyed by letters, each with a paragraph",
			"### A. Vendor the fork\nWe carry the patch ourselves until upstream merges it.\n\n" +
				"### B. Wait for upstream\nThe maintainers said the next release, no date.\n\n" +
				"What's your preference?",
			[]string{"Vendor the fork", "Wait for upstream"}, ""},
		{"numbered section headings in a report are not options",
			"## 1. What changed\nThe retry budget is per host now.\n\n## 2. How I tested it\nA soak test for an hour.\n\n" +
				"Should I merge it?",
			nil, ""},

		{"a recommendation marked between the key and the name",
			"**Approach A: Batch the inserts**\n- fewer round trips\n\n**Approach B (Recommended): Load with COPY**\n- fastest for bulk loads\n\n" +
				"Which approach should I implement?",
			[]string{"Batch the inserts", "Load with COPY"}, "Load with COPY"},

		// The selection a CLI draws, framed or not, whatever form its question takes.
		{"a bare selection with the cursor on the second row",
			"● Bash(rm -rf build/)\n\n Do you want to run this command?\n   1. Yes\n ❯ 2. No, and tell Claude what to do differently (esc)\n",
			[]string{"Yes", "No, and tell Claude what to do differently"}, ""},
		{"a framed selection after a list of files",
			"Files touched so far:\n- api/routes.go\n- api/routes_test.go\n\n" +
				"╭──────────────────────────────────────────╮\n" +
				"│ Do you want to overwrite routes.go?      │\n" +
				"│ ❯ 1. Yes                                 │\n" +
				"│   2. Yes, and don't ask again this session │\n" +
				"│   3. No                                  │\n" +
				"╰──────────────────────────────────────────╯\n",
			[]string{"Yes", "Yes, and don't ask again this session", "No"}, ""},

		// An options list set apart from the question by a recommendation.
		{"question, recommendation, then the options",
			"Which queue should the notifier use? My recommendation is SQS, since we already run it.\n\n" +
				"Choices:\n- SQS\n- RabbitMQ\n- Redis streams\n",
			[]string{"SQS", "RabbitMQ", "Redis streams"}, "SQS"},
		{"options, a recommendation paragraph, then the question",
			"The nightly report is too slow for the new customers.\n\n" +
				"Possible fixes:\n1. Add a covering index on `orders(created_at)`\n2. Precompute the totals in a materialised view\n\n" +
				"I'd go with the first, since it needs no refresh job.\n\n" +
				"Which should I do?",
			[]string{"Add a covering index on `orders(created_at)`", "Precompute the totals in a materialised view"},
			"Add a covering index on `orders(created_at)`"},
		{"a yes/no question with its options labelled under it",
			"**Question:** Can we raise the minimum Node version to 20?\n\n**Alternatives:**\n- Raise it to 20\n- Stay on 18 until April\n",
			[]string{"Raise it to 20", "Stay on 18 until April"}, ""},

		// A yes/no question takes no options from lists or sentences that are not offered as choices.
		{"a yes/no question after a list of changed files",
			"I updated the schema and the seed data.\n\nChanged:\n- db/schema.sql\n- db/seed.sql\n- README.md\n\nShould I run the migration against staging?",
			nil, ""},
		{"a yes/no question after findings with either-or",
			"The flaky specs either time out on CI or crash the browser. Both happen only on the ARM runners.\n\n" +
				"Shall I open an issue for the infra team?",
			nil, ""},
		{"an approval awaited on a plan",
			"Planned steps:\n1. Add the `archived_at` column\n2. Backfill it from the audit log\n3. Drop the old flag\n\n" +
				"No code changed yet. Waiting for your approval before I start.",
			nil, ""},
		{"a lead-in that asks is not a list of changes",
			"Which files should I delete from the fixtures:\n- fixtures/old_users.json\n- fixtures/legacy_orders.json\n",
			[]string{"fixtures/old_users.json", "fixtures/legacy_orders.json"}, ""},
		{"a yes/no question after lettered findings",
			"I found three problems in the cache layer:\nA) the key ignores the locale\nB) the TTL is read as seconds, not minutes\nC) misses are not counted\n\n" +
				"Should I fix them in this PR?",
			nil, ""},
		{"a question that picks among the findings above it",
			"Issues found:\n- the login test is flaky\n- the docker build takes 9 minutes\n\nWhich of these should I tackle first?",
			[]string{"the login test is flaky", "the docker build takes 9 minutes"}, ""},
		{"a plan awaiting an OK, no lead-in",
			"1. Rename `user_id` to `account_id`\n2. Update the three callers\n\nAwaiting your OK on this before I touch the schema.",
			nil, ""},
		{"a request for a go-ahead, its alternatives in the next sentence",
			"The upgrade would rebuild the search index from scratch.\n\nI won't start it without your approval. " +
				"Tell me whether to rebuild it tonight or to wait for the weekend window.",
			[]string{"rebuild it tonight", "wait for the weekend window"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := interpret(tt.output)
			if in.Status != StatusNeedsHelp {
				t.Fatalf("status %s, want needs_help", in.Status)
			}
			if !reflect.DeepEqual(in.Options, tt.want) {
				t.Errorf("options %q, want %q", in.Options, tt.want)
			}
			if in.Recommendation != tt.rec {
				t.Errorf("recommendation %q, want %q", in.Recommendation, tt.rec)
			}
		})
	}
}

// A parenthetical that only quotes code after an alternative points at where it lives; the name is before it.
func TestOptionsCodeOnlyAside(t *testing.T) {
	tests := []struct {
		output string
		want   []string
	}{
		{"The service ships with two caches: Ristretto (`cache/ristretto.go`) and Redis (`cache/redis.go`). Which should checkout use?",
			[]string{"Ristretto", "Redis"}},
		{"Do you want the linter config in YAML (`.golangci.yml`) or in TOML (`.golangci.toml`)?",
			[]string{"in YAML", "in TOML"}},
		// A parenthetical in words says which one: it stays.
		{"Should the parser use `rustls` (pure Rust) or `native-tls`?",
			[]string{"`rustls` (pure Rust)", "`native-tls`"}},
	}
	for _, tt := range tests {
		if got := interpret(tt.output).Options; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("options of %q = %q, want %q", tt.output, got, tt.want)
		}
	}
}

// A short question after options under headings leans on the text before the options, never on what is said about
// the last option.
func TestQuestionTextSkipsOptionSections(t *testing.T) {
	tests := []struct{ output, want string }{
		{"The importer needs a new home.\n\n## Option A — A cron job\nRuns hourly on the batch host.\n\n## Option B — A queue consumer\nNeeds the broker to be up.\n\nWhich one?",
			"The importer needs a new home. Which one?"},
		{"**Option 1: Keep the v1 routes** — nothing breaks.\n\n**Option 2: Drop them** — the clients on v1 break.\n\nYour call?",
			"Your call?"},
	}
	for _, tt := range tests {
		if got := interpret(tt.output).Question; got != tt.want {
			t.Errorf("question %q, want %q", got, tt.want)
		}
	}
}
