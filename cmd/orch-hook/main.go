// Command orch-hook is orch's PreToolUse hook for Claude Code alone (agent.RunHook): Claude Code runs it before every
// tool call of a run orch gives its policy, with the call on stdin and the run's state in ORCH_PERMISSIONS, and reads
// the decision from stdout. orch gives this program as the hook when it stands beside the orch binary and speaks the
// same protocol, and its own binary (`orch claude-hook`) otherwise; this program starts in about two milliseconds,
// where the whole orch binary takes ten or more, on every tool call.
//
// -protocol prints the version of what the hook decides from, which orch checks before it uses the program. Exit 2
// is Claude Code's blocking error (code.claude.com/docs/en/hooks, "Exit code 2"): a hook that cannot decide blocks
// the call and says why.
package main

import (
	"fmt"
	"os"

	"github.com/orchrun/orch/agent"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-protocol" {
		fmt.Println(agent.HookProtocol)
		return
	}
	home, _ := os.UserHomeDir()
	if err := agent.RunHook(os.Stdin, os.Stdout, os.Getenv(agent.HookEnv), home); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
