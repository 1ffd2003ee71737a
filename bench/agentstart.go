package main

import (
	"context"
	"fmt"
	"time"

	"github.com/orchrun/orch/sandbox"
)

// agentStartResult is the no-op agent's process through the local sandbox, with no shim, behind orch-shim and behind
// orch's own binary as the shim: medians in milliseconds of the same number of starts, interleaved.
type agentStartResult struct {
	bare, small, whole float64
	note               string
}

// measureAgentStart runs the no-op agent (`sh -c "echo Done."`) n times in each of three local sandboxes, in turn so
// that the machine's load falls on all three alike, and times Exec from its call to its return: what a step pays to
// start and end its agent.
func measureAgentStart(ctx context.Context, r *rig, n int) (agentStartResult, error) {
	ways := []struct {
		name  string
		shim  []string
		times []time.Duration
	}{
		{name: "no shim"},
		{name: "orch-shim", shim: r.shim},
		{name: "orch sandbox-shim", shim: []string{r.orchBin, "sandbox-shim"}},
	}
	boxes := make([]*sandbox.Local, len(ways))
	for i, w := range ways {
		boxes[i] = sandbox.NewLocal(sandbox.LocalConfig{Shim: w.shim, Env: r.env})
	}
	spec := sandbox.Spec{Args: []string{"sh", "-c", "echo Done."}, Dir: r.tmp, Timeout: time.Minute}
	for range n {
		for i := range ways {
			start := time.Now()
			res, err := boxes[i].Exec(ctx, spec, nil)
			if err != nil {
				return agentStartResult{}, fmt.Errorf("%s: %w", ways[i].name, err)
			}
			if res.ExitCode != 0 || string(res.Stdout) != "Done.\n" {
				return agentStartResult{}, fmt.Errorf("%s: exit %d, stdout %q", ways[i].name, res.ExitCode, res.Stdout)
			}
			ways[i].times = append(ways[i].times, time.Since(start))
		}
	}
	res := agentStartResult{
		bare:  percentileMs(ways[0].times, 0.5),
		small: percentileMs(ways[1].times, 0.5),
		whole: percentileMs(ways[2].times, 0.5),
	}
	res.note = fmt.Sprintf("the no-op agent (`sh -c \"echo Done.\"`) through the local sandbox's Exec, %d times each way, "+
		"interleaved: no shim %.2f ms, behind orch-shim %.2f ms (+%.2f), behind orch's own binary as the shim %.2f ms "+
		"(+%.2f) at the median; orch runs orch-shim when it stands beside orch (`make build`, `go install ./cmd/...`, "+
		"the image), its own binary otherwise (`go run`)", n, res.bare, res.small, res.small-res.bare, res.whole, res.whole-res.bare)
	return res, nil
}
