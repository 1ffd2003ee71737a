// Command orch-shim is the sandbox's shim alone (package sandbox/shim): the process orch puts between itself and each
// local agent, below which everything the agent starts stays and dies with it. orch runs it when it stands beside the
// orch binary and speaks the same protocol, and runs its own binary as the shim otherwise; this program starts in
// about a millisecond, where the whole orch binary takes tens.
//
// Its arguments are the shim's (-stdin N [-user UID:GID] [-report] -- PATH ARGV0 [ARG...]); -protocol prints the
// version of that command line, which orch checks before it uses the program.
package main

import (
	"fmt"
	"os"

	"github.com/orchrun/orch/sandbox/shim"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-protocol" {
		fmt.Println(shim.Protocol)
		return
	}
	os.Exit(shim.Run(os.Args[1:]))
}
