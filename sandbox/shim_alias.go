package sandbox

import "github.com/orchrun/orch/sandbox/shim"

// ShimCommand is the hidden first argument that makes the orch binary the sandbox shim (shim.Run): the local sandbox
// runs it as LocalConfig.Shim says unless orch-shim stands beside orch, and the Docker sandbox runs OrchPath
// ShimCommand in the container when DockerConfig.OrchBinary is mounted.
const ShimCommand = shim.Command

// RunShim runs the shim (shim.Run) with the arguments that follow ShimCommand.
func RunShim(args []string) int { return shim.Run(args) }
