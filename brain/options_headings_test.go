package brain

import (
	"reflect"
	"testing"
)

// Options laid out as headings or paragraphs, each with what is said about it under it: the label is the name.
func TestParseOptionsHeadings(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"markdown headings with pros and cons",
			"### Option A: Long-lived cookie\n- Simple\n- Stolen cookies live 30 days\n\n### Option B: Token rotation\n- More code\n",
			[]string{"Long-lived cookie", "Token rotation"}},
		{"bold numbered headings with an explanation after a dash",
			"**Option 1: Reset the cache in a fixture** — smallest change.\n\n**Option 2: Make the cache per-request** — removes the global.",
			[]string{"Reset the cache in a fixture", "Make the cache per-request"}},
		{"paragraphs opened by their position",
			"First possibility: bump pydantic to 2.7.\n\nSecond possibility: pin fastapi to 0.110.",
			[]string{"bump pydantic to 2.7", "pin fastapi to 0.110"}},
		{"numbered bold names with indented pros and cons",
			"1. **Cursor-based**\n   - Pro: stable\n   - Con: no page jumps\n2. **Offset/limit**\n   - Pro: page numbers\n",
			[]string{"Cursor-based", "Offset/limit"}},
		{"lettered options with sub-bullets",
			"A) Redis\n   - pro: already running\nB) Memcached\n   - con: no persistence\n",
			[]string{"Redis", "Memcached"}},
		{"bullets with nested bullets",
			"- **Migrate to flat config**\n  - required from v10\n- **Keep .eslintrc**\n  - deprecated\n",
			[]string{"Migrate to flat config", "Keep .eslintrc"}},
		{"a wrapped option keeps its wrapped line",
			"A) Keep the endpoint for one more\n   release and warn clients\nB) Remove it now",
			[]string{"Keep the endpoint for one more release and warn clients", "Remove it now"}},
		{"a bold name and a dash", "- **LaunchDarkly** — paid per seat\n- **Settings table** — free",
			[]string{"LaunchDarkly", "Settings table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseOptions(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseOptions(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// A drawn selection is read by its rows; a numbered list without a cursor is left to the list readers.
func TestSelectionOptions(t *testing.T) {
	framed := "╭────────────╮\n│ Do you want to proceed? │\n│ ❯ 1. Yes │\n│   2. Yes, and don't ask again │\n│   3. No, and tell Claude what to do differently (esc) │\n╰────────────╯"
	bare := " Do you want to make this edit?\n ❯ 1. Yes\n   2. Yes, allow all edits during this session (shift+tab)\n   3. No (esc)"
	tests := []struct {
		name, text string
		want       []string
	}{
		{"framed", framed, []string{"Yes", "Yes, and don't ask again", "No, and tell Claude what to do differently"}},
		{"unframed", bare, []string{"Yes", "Yes, allow all edits during this session", "No"}},
		{"a numbered list in prose has no cursor", "1. Add the column\n2. Backfill\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := selectionOptions(tt.text); !reflect.DeepEqual(optionLabels(got), tt.want) {
				t.Errorf("selectionOptions = %q, want %q", optionLabels(got), tt.want)
			}
		})
	}
	if got := ParseOptions(framed); len(got) != 3 || got[0] != "Yes" {
		t.Errorf("ParseOptions(framed) = %q", got)
	}
	if !tableRowRe.MatchString("│ ❯ 1. Yes │") {
		t.Error("a framed row is not read with its box")
	}
}
