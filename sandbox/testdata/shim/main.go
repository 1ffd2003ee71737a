// Command shim is the sandbox shim alone, built static by the Docker tests and mounted as the orch binary: the
// test binary itself, built with the race detector, needs a dynamic loader the test image does not have.
package main

import (
	"fmt"
	"os"

	"github.com/orchrun/orch/sandbox"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != sandbox.ShimCommand {
		fmt.Fprintf(os.Stderr, "usage: %s %s ARGS...\n", os.Args[0], sandbox.ShimCommand)
		os.Exit(2)
	}
	os.Exit(sandbox.RunShim(os.Args[2:]))
}
