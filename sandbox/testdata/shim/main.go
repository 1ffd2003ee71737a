// Command shim is the sandbox shim alone, built static by the Docker tests and mounted as the orch binary: the
// test binary itself, built with the race detector, needs a dynamic loader the test image does not have.
package main

import (
	"fmt"
	"os"

	"github.com/orchrun/orch/sandbox/shim"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != shim.Command {
		fmt.Fprintf(os.Stderr, "usage: %s %s ARGS...\n", os.Args[0], shim.Command)
		os.Exit(2)
	}
	os.Exit(shim.Run(os.Args[2:]))
}
