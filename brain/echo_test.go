package brain

import (
	"context"
	"strings"
	"testing"

	"github.com/orchrun/orch/agent"
)

// The prompts orch sends, built as the worker builds them, for agents that send them back.
var (
	echoTask      = agent.PromptTask{ID: "1.2", Title: "Add a cache", Description: "Cache the lookups of the user service.\n\nKeep the tests green."}
	echoGuidance  = []string{"The human chose option B: In-memory", "Use an LRU.\nBound it to 1000 entries."}
	echoPrompt    = agent.BuildPrompt(echoTask, nil)
	echoGuided    = agent.BuildPrompt(echoTask, echoGuidance)
	echoChat      = agent.BuildChatPrompt(echoTask, echoGuidance, []agent.Turn{{Human: true, Text: "Start with the reads."}, {Text: "Done: reads are cached."}, {Human: true, Text: "Now the writes?"}})
	realQuestion  = "QUESTION: Which cache should I use?\nOPTIONS:\nA) Redis  B) In-memory  C) File-based\nRECOMMENDATION: B"
	promptFooter  = footerOf(echoPrompt)
	placeholderQs = []string{"<your question>", "<first option>", "<second option>", "<the option you recommend>"}
)

// footerOf is the fixed closing part of a prompt: from the line that asks for a summary to the end.
func footerOf(prompt string) string {
	i := strings.Index(prompt, "When you are done")
	if i < 0 {
		panic("the prompt has no footer")
	}
	return prompt[i:]
}

func hasPlaceholder(in Interpretation) bool {
	all := in.Question + "\n" + in.Recommendation + "\n" + strings.Join(in.Options, "\n")
	for _, p := range placeholderQs {
		if strings.Contains(all, p) {
			return true
		}
	}
	return false
}

// An output that is only a copy of what orch sent leaves nothing, however the copy was sent back.
func TestWithoutEchoRemovesThePrompt(t *testing.T) {
	indent := func(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
	cases := []struct {
		name, sent, output string
	}{
		{"prompt", echoPrompt, echoPrompt},
		{"prompt with guidance", echoGuided, echoGuided},
		{"chat prompt with turns and guidance", echoChat, echoChat},
		{"CRLF line endings", echoGuided, strings.ReplaceAll(echoGuided, "\n", "\r\n")},
		{"indented", echoGuided, indent(echoGuided)},
		{"quoted as a reply", echoGuided, "> " + strings.ReplaceAll(echoGuided, "\n", "\n> ")},
		{"twice", echoPrompt, echoPrompt + "\n" + echoPrompt},
		{"the footer alone", echoGuided, promptFooter},
		{"the guidance section alone", echoGuided, echoGuided[strings.Index(echoGuided, "## Guidance"):]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rest, echoed := WithoutEcho(c.output, c.sent)
			if !echoed || strings.TrimSpace(rest) != "" {
				t.Errorf("echoed=%v, left %q", echoed, rest)
			}
		})
	}
}

// What the agent says beside the copy stays, in order, and is read as its own: a real question after an echo of
// the prompt is the question.
func TestWithoutEchoKeepsTheAgentsWords(t *testing.T) {
	own := "I looked at the user service: lookups go through one function.\n\n" + realQuestion
	for _, output := range []string{
		echoGuided + "\n" + own,
		strings.ReplaceAll(echoGuided+"\n"+own, "\n", "\r\n"),
		promptFooter + "\n\n" + own,
		own + "\n\n" + promptFooter, // an agent that restates the protocol after asking
	} {
		rest, echoed := WithoutEcho(output, echoGuided)
		if !echoed {
			t.Fatalf("no echo found in %q", output)
		}
		if got := strings.ReplaceAll(strings.TrimSpace(rest), "\r", ""); got != own {
			t.Errorf("left %q, want %q", got, own)
		}
		in := interpret(rest)
		if in.Status != StatusNeedsHelp || in.Question != "Which cache should I use?" ||
			strings.Join(in.Options, "|") != "Redis|In-memory|File-based" || in.Recommendation != "In-memory" {
			t.Errorf("interpretation %+v", in)
		}
	}
}

// One line of the prompt in the agent's answer is the agent's: a title, a sentence of the task.
func TestWithoutEchoLeavesShortQuotes(t *testing.T) {
	for _, output := range []string{
		"Task 1.2: Add a cache\n\nImplemented the cache. All 14 tests pass.",
		"Keep the tests green.\n\nDone: the tests are green.",
		"Implemented an LRU cache.\n```\n}\n```\nAll tests pass.",
	} {
		if rest, echoed := WithoutEcho(output, echoGuided); echoed || rest != output {
			t.Errorf("WithoutEcho(%q) = %q, %v", output, rest, echoed)
		}
	}
	// A fence inside a copy stays, so that the agent's own code blocks still pair up.
	sent := "Run this:\n```\ngo test ./... -run TestCache -count=1\n```\nand report."
	out := "Run this:\n```\ngo test ./... -run TestCache -count=1\n```\nand report.\n\nThe cache works."
	if rest, _ := WithoutEcho(out, sent); strings.Count(rest, "```") != 2 || !strings.Contains(rest, "The cache works.") ||
		strings.Contains(rest, "go test") {
		t.Errorf("left %q", rest)
	}
}

// Without the prompt to compare with (orch brain interpret, a partial echo), the form's blanks are still not the
// agent's question: not on the marker fast path, not in the heuristic, not in the LLM's prompt.
func TestTemplatePlaceholdersAreNotAQuestion(t *testing.T) {
	for name, output := range map[string]string{
		"prompt":                   echoPrompt,
		"prompt with guidance":     echoGuided,
		"footer":                   promptFooter,
		"footer, CRLF":             strings.ReplaceAll(promptFooter, "\n", "\r\n"),
		"footer, indented":         "  " + strings.ReplaceAll(promptFooter, "\n", "\n  "),
		"footer in bold markers":   strings.NewReplacer("QUESTION:", "**QUESTION:**", "OPTIONS:", "**OPTIONS:**", "RECOMMENDATION:", "**RECOMMENDATION:**").Replace(promptFooter),
		"form on one line":         "QUESTION: <your question> OPTIONS: A) <first option>  B) <second option> RECOMMENDATION: <the option you recommend>",
		"value on the next line":   "QUESTION:\n<your question>\nOPTIONS:\nA) <first option>\nB) <second option>",
		"footer, then a summary":   promptFooter + "\n\nImplemented the cache. All 14 tests pass.",
		"summary, then the footer": "Implemented the cache. All 14 tests pass.\n\n" + promptFooter,
	} {
		t.Run(name, func(t *testing.T) {
			if in, ok := ExplicitMarkers(output); ok {
				t.Errorf("the marker fast path read the form: %+v", in)
			}
			in := interpret(output)
			if hasPlaceholder(in) {
				t.Errorf("interpretation %+v", in)
			}
			if strings.Contains(name, "summary") && in.Status != StatusCompleted {
				t.Errorf("status %s, want completed: %+v", in.Status, in)
			}
		})
	}
	// A real question after the form is still read, options and recommendation included; the form's bare
	// "OPTIONS:" does not take the agent's next paragraph for its options.
	for _, output := range []string{
		promptFooter + "\n\n" + realQuestion,
		promptFooter + "\n\nI compared them: A) Redis is shared, B) in-memory is simple.\n\n" + realQuestion,
	} {
		in := interpret(output)
		if in.Status != StatusNeedsHelp || in.Question != "Which cache should I use?" ||
			strings.Join(in.Options, "|") != "Redis|In-memory|File-based" || in.Recommendation != "In-memory" {
			t.Errorf("question after the footer: %+v", in)
		}
	}

	f := newFakeMessagesAPI(t, okReply(`{"status":"failed","summary":"echo","error":"no work","question":null,"options":null,"recommendation":null}`))
	a := newTestAnthropic(t, f, &sleeps{})
	if _, err := a.Interpret(context.Background(), echoGuided); err != nil {
		t.Fatal(err)
	}
	sent := f.reqs[0].text(0)
	for _, p := range placeholderQs {
		if strings.Contains(sent, p) {
			t.Errorf("the LLM's prompt holds %q:\n%s", p, sent)
		}
	}
	if !strings.Contains(sent, "Cache the lookups of the user service.") {
		t.Errorf("the LLM's prompt lost the rest of the output:\n%s", sent)
	}
}

func TestFormLine(t *testing.T) {
	for l, want := range map[string]bool{
		"QUESTION: <your question>":                       true,
		"A) <first option>  B) <second option>":           true,
		"RECOMMENDATION: <the option you recommend>":      true,
		"  > **QUESTION:** <your question>\r":             true,
		"- <first option>":                                true,
		"<your question>":                                 true,
		"QUESTION: Which <storage backend> should I use?": false,
		"A) <div>  B) <span>":                             false,
		"OPTIONS:":                                        false,
		"Use List<String> or Set<String>?":                false,
		"QUESTION: <your question>?":                      false,
		"A) Redis  B) <second option>":                    false,
		"Wrap it in <a href> tags":                        false,
	} {
		if got := formLine(l); got != want {
			t.Errorf("formLine(%q) = %v, want %v", l, got, want)
		}
	}
}
