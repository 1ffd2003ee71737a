package agent

import "strings"

// Turn is one message of an interactive conversation.
type Turn struct {
	Human bool
	Text  string
}

// chatFooter replaces the prompt's footer in a conversation: a human reads the reply, not the brain.
const chatFooter = `You are in a conversation with a human about this task. Do what they ask, then reply to their last
message in a few lines. They end the conversation when they are satisfied.`

const chatHeader = "\n\n## Conversation so far\n\n"

// BuildChatPrompt writes the prompt for one turn of an interactive task: the task, then the whole conversation so far
// (each message quoted as guidance is), then the guidance. An agent that keeps its own session (SessionResumer) is
// given only the human's last message instead: see ChatMessage.
func BuildChatPrompt(t PromptTask, guidance []string, turns []Turn) string {
	return buildPrompt(t, chatFooter, turns, guidance)
}

// ChatMessage is the prompt of a turn for an agent that resumes its session: the human's last message, which its
// session does not have yet.
func ChatMessage(turns []Turn) string {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Human {
			return turns[i].Text
		}
	}
	return ""
}

// ChatFromPrompt returns the conversation BuildChatPrompt put into prompt, or nil when it has none.
func ChatFromPrompt(prompt string) []Turn {
	// The last header is the conversation's: a description may quote one, but every message is quoted line by line
	// and cannot.
	i := strings.LastIndex(prompt, chatHeader)
	if i < 0 {
		return nil
	}
	rest := prompt[i+len(chatHeader):]
	if j := strings.LastIndex(rest, guidanceHeader); j >= 0 {
		rest = rest[:j]
	}
	rest, ok := strings.CutSuffix(rest, "\n")
	if !ok {
		return nil
	}
	var turns []Turn
	for _, item := range strings.Split(rest, "\n\n") {
		lines := strings.Split(item, "\n")
		var t Turn
		switch lines[0] {
		case "Human:":
			t.Human = true
		case "Agent:":
		default:
			return nil
		}
		text, ok := unquote(lines[1:])
		if !ok {
			return nil
		}
		t.Text = text
		turns = append(turns, t)
	}
	return turns
}

// SessionResumer is an adapter whose agent keeps a conversation in a session it resumes (claude --resume): an
// interactive turn then needs only the new message.
type SessionResumer interface {
	ResumesSessions() bool
}

// ResumesSessions implements SessionResumer: claude continues a session with --resume.
func (c *Claude) ResumesSessions() bool { return true }
