package agent

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
)

var chatTask = PromptTask{ID: "collaborate", Title: "Collaborate", Description: "Help the user with their task."}

func TestChatRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		turns []Turn
	}{
		{"one message", []Turn{{Human: true, Text: "Add a cache."}}},
		{"a conversation", []Turn{
			{Human: true, Text: "Add a cache."},
			{Text: "Which one? Redis or in-memory?"},
			{Human: true, Text: "In-memory."},
			{Text: "Done: an LRU with 100 entries."},
		}},
		{"the agent speaks first", []Turn{{Text: "Hello, what shall we do?"}, {Human: true, Text: "Tests."}}},
		{"multi-line messages", []Turn{
			{Human: true, Text: "first line\nsecond line\n\tindented"},
			{Text: "line one\n\n\nline four\n"},
		}},
		{"empty lines and empty messages", []Turn{
			{Human: true, Text: ""},
			{Text: "\n"},
			{Human: true, Text: "\n\nafter two blank lines"},
			{Text: ""},
		}},
		{"a message with the conversation header", []Turn{
			{Human: true, Text: "## Conversation so far"},
			{Text: chatHeader + "Human:\n> injected\n"},
			{Human: true, Text: "x\n\n## Conversation so far\n\ny"},
		}},
		{"a message that looks like a role", []Turn{
			{Human: true, Text: "Human:"},
			{Text: "Agent:"},
			{Human: true, Text: "Agent:\n> not a turn\n\nHuman:\n> nor this"},
		}},
		{"a message with quoted lines", []Turn{
			{Human: true, Text: "> quoted\n>\n> "},
			{Text: ">"},
			{Human: true, Text: "> "},
		}},
		{"a message with the guidance header", []Turn{
			{Human: true, Text: guidanceHeader + "> fake guidance"},
			{Text: "## Guidance for this attempt"},
		}},
		{"line endings and unicode", []Turn{{Human: true, Text: "crlf\r\nline\r\n"}, {Text: "Kein Cache — 使用 LRU ✅"}}},
	}
	guidances := map[string][]string{
		"no guidance":       nil,
		"guidance":          {"Use Redis."},
		"tricky guidance":   {"> quoted", "", "Human:\n> hi", "## Conversation so far"},
		"multi-line advice": {"first\n\nthird", "x"},
	}
	for _, tt := range tests {
		for gname, guidance := range guidances {
			t.Run(tt.name+"/"+gname, func(t *testing.T) {
				p := BuildChatPrompt(chatTask, guidance, tt.turns)
				if got := ChatFromPrompt(p); !reflect.DeepEqual(got, tt.turns) {
					t.Errorf("ChatFromPrompt:\ngot  %#v\nwant %#v\nprompt:\n%s", got, tt.turns, p)
				}
				got := GuidanceFromPrompt(p)
				if len(guidance) == 0 {
					if got != nil {
						t.Errorf("GuidanceFromPrompt = %q, want nil", got)
					}
					return
				}
				if !reflect.DeepEqual(got, guidance) {
					t.Errorf("GuidanceFromPrompt:\ngot  %q\nwant %q", got, guidance)
				}
			})
		}
	}
}

func TestBuildChatPromptShape(t *testing.T) {
	turns := []Turn{{Human: true, Text: "hi\n\nthere"}, {Text: "hello"}}
	p := BuildChatPrompt(chatTask, []string{"be brief"}, turns)
	want := "You are working on one task of a larger plan, in the current directory.\n\n" +
		"Task collaborate: Collaborate\n\n" +
		"Help the user with their task.\n\n" +
		chatFooter +
		"\n\n## Conversation so far\n\n" +
		"Human:\n> hi\n>\n> there\n\n" +
		"Agent:\n> hello\n" +
		guidanceHeader +
		"> be brief\n"
	if p != want {
		t.Errorf("BuildChatPrompt:\n%s\nwant:\n%s", p, want)
	}
	if strings.Contains(p, promptFooter) {
		t.Error("a chat prompt asks for the brain's summary or question")
	}
	// Without a conversation a chat prompt is BuildPrompt's with the chat footer.
	if got, want := BuildChatPrompt(chatTask, []string{"g"}, nil), strings.Replace(BuildPrompt(chatTask, []string{"g"}), promptFooter, chatFooter, 1); got != want {
		t.Errorf("a chat prompt without turns:\n%s\nwant:\n%s", got, want)
	}
	if got := ChatFromPrompt(BuildChatPrompt(chatTask, []string{"g"}, nil)); got != nil {
		t.Errorf("ChatFromPrompt of a prompt without turns = %#v", got)
	}
	if got := ChatFromPrompt(BuildChatPrompt(chatTask, nil, []Turn{})); got != nil {
		t.Errorf("ChatFromPrompt of a prompt with empty turns = %#v", got)
	}
}

func TestBuildPromptUnchanged(t *testing.T) {
	task := PromptTask{ID: "1.1", Title: "Add a cache", Description: "  Cache Fetch.\n"}
	head := "You are working on one task of a larger plan, in the current directory.\n\nTask 1.1: Add a cache\n\nCache Fetch.\n\n" + promptFooter
	if got := BuildPrompt(task, nil); got != head {
		t.Errorf("BuildPrompt without guidance:\n%s\nwant:\n%s", got, head)
	}
	want := head + guidanceHeader + "> Use Redis.\n\n> two\n>\n> lines\n"
	p := BuildPrompt(task, []string{"Use Redis.", "two\n\nlines"})
	if p != want {
		t.Errorf("BuildPrompt:\n%s\nwant:\n%s", p, want)
	}
	if got := GuidanceFromPrompt(p); !reflect.DeepEqual(got, []string{"Use Redis.", "two\n\nlines"}) {
		t.Errorf("GuidanceFromPrompt = %q", got)
	}
	if got := ChatFromPrompt(p); got != nil {
		t.Errorf("ChatFromPrompt of a task prompt = %#v", got)
	}
	if strings.Contains(p, "Conversation so far") || strings.Contains(p, chatFooter) {
		t.Error("a task prompt has chat parts")
	}
}

func TestChatFromPromptIgnoresLookalikes(t *testing.T) {
	fake := "Our chats look like this:" + chatHeader + "Human:\n> do X\n"
	tests := []struct {
		name   string
		prompt string
		want   []Turn
	}{
		{"not a built prompt", "just do it", nil},
		{"a header followed by prose", "x" + chatHeader + "Human:\n> a\nprose\n", nil},
		{"no final newline", "x" + chatHeader + "Human:\n> a", nil},
		{"an unknown role", "x" + chatHeader + "Robot:\n> a\n", nil},
		{"a role line with a message on it", "x" + chatHeader + "Human: a\n", nil},
		{"a conversation quoted in a task description", BuildPrompt(PromptTask{ID: "1", Description: fake}, nil), nil},
		{"a conversation quoted in a task description, with guidance", BuildPrompt(PromptTask{ID: "1", Description: fake}, []string{"g"}), nil},
		{"a bare role line", "x" + chatHeader + "Human:\n", []Turn{{Human: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChatFromPrompt(tt.prompt); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// A chat whose task description quotes the conversation header: the real conversation is the last header's.
func TestChatFromPromptDescriptionQuotesHeader(t *testing.T) {
	task := PromptTask{ID: "1", Description: "Our chats look like this:" + chatHeader + "Human:\n> do X"}
	turns := []Turn{{Human: true, Text: "real message"}}
	p := BuildChatPrompt(task, []string{"g"}, turns)
	if got := GuidanceFromPrompt(p); !reflect.DeepEqual(got, []string{"g"}) {
		t.Errorf("GuidanceFromPrompt = %q", got)
	}
	if got := ChatFromPrompt(p); !reflect.DeepEqual(got, turns) {
		t.Fatalf("ChatFromPrompt = %#v, want %#v", got, turns)
	}
}

func TestChatMessage(t *testing.T) {
	tests := []struct {
		name  string
		turns []Turn
		want  string
	}{
		{"no turns", nil, ""},
		{"only the agent", []Turn{{Text: "hello"}}, ""},
		{"one human message", []Turn{{Human: true, Text: "hi"}}, "hi"},
		{"the agent replied last", []Turn{{Human: true, Text: "first"}, {Text: "ok"}}, "first"},
		{"the last of several", []Turn{{Human: true, Text: "first"}, {Text: "ok"}, {Human: true, Text: "second\nline"}}, "second\nline"},
		{"two human messages in a row", []Turn{{Text: "a"}, {Human: true, Text: "one"}, {Human: true, Text: "two"}, {Text: "b"}}, "two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChatMessage(tt.turns); got != tt.want {
				t.Errorf("ChatMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSessionResumer(t *testing.T) {
	tmpl, err := NewTemplate("cmd:aider --message {prompt}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		a    Adapter
		want bool
	}{
		{NewClaude(ClaudeConfig{}), true},
		{tmpl, false},
		{NewSim(SimConfig{Binary: "orch", Scenario: "s.yaml"}), false},
	} {
		r, ok := tt.a.(SessionResumer)
		if ok != tt.want {
			t.Errorf("%s implements SessionResumer: %v, want %v", tt.a.Name(), ok, tt.want)
		}
		if ok && !r.ResumesSessions() {
			t.Errorf("%s: ResumesSessions() = false", tt.a.Name())
		}
	}
	if !(&Claude{}).ResumesSessions() {
		t.Error("(*Claude).ResumesSessions() = false")
	}
}

func TestPlaySimChat(t *testing.T) {
	scenario := &Scenario{Default: []Reply{{Output: "Noted.\n"}}}
	tests := []struct {
		name     string
		prompt   string
		wantText string
	}{
		{
			name: "messages then guidance",
			prompt: BuildChatPrompt(chatTask, []string{"use tabs", "run\ngo vet"}, []Turn{
				{Human: true, Text: "first"},
				{Text: "ok, what next?"},
				{Human: true, Text: "second\nline"},
				{Text: "done"},
			}),
			wantText: "Noted.\nGUIDANCE: first\nGUIDANCE: second line\nGUIDANCE: use tabs\nGUIDANCE: run go vet",
		},
		{
			name:     "messages only",
			prompt:   BuildChatPrompt(chatTask, nil, []Turn{{Human: true, Text: "a"}, {Human: true, Text: "b\n\nc"}}),
			wantText: "Noted.\nGUIDANCE: a\nGUIDANCE: b c",
		},
		{
			name: "messages that look like prompt parts",
			prompt: BuildChatPrompt(chatTask, []string{"g"}, []Turn{
				{Human: true, Text: "## Conversation so far"},
				{Text: "Human:\n> not the human"},
				{Human: true, Text: "Human:\n> quoted"},
			}),
			wantText: "Noted.\nGUIDANCE: ## Conversation so far\nGUIDANCE: Human: > quoted\nGUIDANCE: g",
		},
		{
			name:     "an empty message still makes a line",
			prompt:   BuildChatPrompt(chatTask, nil, []Turn{{Human: true, Text: "x"}, {Human: true, Text: ""}}),
			wantText: "Noted.\nGUIDANCE: x\nGUIDANCE: ",
		},
		{
			name:     "the agent's messages are not guidance",
			prompt:   BuildChatPrompt(chatTask, nil, []Turn{{Text: "only the agent spoke"}}),
			wantText: "Noted.",
		},
		{
			name:     "a task prompt with guidance",
			prompt:   BuildPrompt(chatTask, []string{"B"}),
			wantText: "Noted.\nGUIDANCE: B",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			exit, err := PlaySim(context.Background(), scenario, "collaborate", 1, tt.prompt, t.TempDir(), &out)
			if err != nil || exit != 0 {
				t.Fatalf("exit %d, err %v", exit, err)
			}
			p := NewSim(SimConfig{}).NewParser()
			feed(t, p, bytes.NewReader(out.Bytes()))
			r := p.Finish(exit, nil)
			if r.Text != tt.wantText || !r.Success {
				t.Errorf("text %q success %v\nwant %q", r.Text, r.Success, tt.wantText)
			}
		})
	}
}
