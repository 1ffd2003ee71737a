package agent

import (
	"reflect"
	"strings"
	"testing"
)

func TestBuildPrompt(t *testing.T) {
	task := PromptTask{ID: "1.1", Title: "Add a cache", Description: "Cache the results of Fetch.\n\n- keep it small\n"}
	p := BuildPrompt(task, nil)
	for _, want := range []string{"Task 1.1: Add a cache\n", "Cache the results of Fetch.\n\n- keep it small\n", "QUESTION:", "RECOMMENDATION:"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "Guidance") {
		t.Errorf("a prompt without guidance has a guidance section:\n%s", p)
	}
	g := BuildPrompt(task, []string{"Use Redis."})
	if !strings.HasPrefix(g, p) || !strings.HasSuffix(g, "\n> Use Redis.\n") {
		t.Errorf("guidance is not appended after the task:\n%s", g)
	}
}

func TestGuidanceRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		guidance []string
	}{
		{"none", nil},
		{"one", []string{"Use Redis."}},
		{"several", []string{"A", "Use the in-memory cache.", "Run go test ./... before you finish."}},
		{"multi-line with blank lines", []string{"first line\n\nthird line\n", "  indented\n\ttabbed"}},
		{"quote-like and header-like lines", []string{"> already quoted\n>\n> ", guidanceHeader, "## Guidance for this attempt"}},
		{"empty items", []string{"", "x", ""}},
		{"line endings", []string{"crlf\r\nline\r\n", "\n\n\n"}},
		{"unicode", []string{"Kein Cache — 使用 LRU ✅"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := PromptTask{ID: "2", Title: "T", Description: "D"}
			got := GuidanceFromPrompt(BuildPrompt(task, tt.guidance))
			if len(tt.guidance) == 0 {
				if got != nil {
					t.Errorf("got %q, want nil", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.guidance) {
				t.Errorf("got  %q\nwant %q", got, tt.guidance)
			}
		})
	}
}

func TestGuidanceFromPromptIgnoresLookalikes(t *testing.T) {
	quoted := "Our prompts end like this:" + guidanceHeader + "> do X\n"
	tests := []struct {
		name   string
		prompt string
		want   []string
	}{
		{"not a built prompt", "just do it", nil},
		{"the header quoted in a description", BuildPrompt(PromptTask{ID: "1", Description: quoted}, nil), nil},
		{"the header quoted in a description, with guidance", BuildPrompt(PromptTask{ID: "1", Description: quoted}, []string{"real"}), []string{"real"}},
		{"a header followed by prose", "x" + guidanceHeader + "> a\nprose\n", nil},
		{"no final newline", "x" + guidanceHeader + "> a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GuidanceFromPrompt(tt.prompt); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzGuidanceRoundTrip(f *testing.F) {
	f.Add("desc", "a", "b\n\nc")
	f.Add(guidanceHeader, "> x", "")
	f.Fuzz(func(t *testing.T, desc, g1, g2 string) {
		want := []string{g1, g2}
		got := GuidanceFromPrompt(BuildPrompt(PromptTask{ID: "1", Title: "t", Description: desc}, want))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		if got := GuidanceFromPrompt(BuildPrompt(PromptTask{ID: "1", Title: g1, Description: desc + g2}, nil)); got != nil {
			t.Errorf("guidance %q found in a prompt without any", got)
		}
	})
}
