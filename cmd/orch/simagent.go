package main

import (
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/agent"
)

// simAgentCmd is the simulated agent: a real process in the sandbox that plays a scenario file and speaks Claude
// Code's stream-json. It accepts claude's output flags so that a command line built for claude also works.
func (a *app) simAgentCmd() *cobra.Command {
	var scenario, prompt, format string
	var verbose bool
	cmd := &cobra.Command{
		Use:    "sim-agent --scenario FILE -p PROMPT",
		Short:  "Play a scenario file as a Claude-Code-compatible agent (for demos and tests)",
		Hidden: true,
		Args:   args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prompt == "" && len(args) == 1 {
				prompt = args[0]
			}
			if scenario == "" {
				scenario = a.env("ORCH_SIM_SCENARIO")
			}
			if scenario == "" {
				return usageErr("sim-agent: --scenario is required")
			}
			s, err := agent.LoadScenario(scenario)
			if err != nil {
				return usageErr("%v", err)
			}
			taskID := a.env("ORCH_TASK_ID")
			attempt, err := strconv.Atoi(a.env("ORCH_ATTEMPT"))
			if err != nil || attempt < 1 {
				attempt = 1
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			code, err := agent.PlaySim(cmd.Context(), s, taskID, attempt, prompt, dir, a.stdout)
			if err != nil {
				return err
			}
			if code != 0 {
				return withCode(code, errSilent)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenario, "scenario", "", "scenario file (env ORCH_SIM_SCENARIO)")
	f.StringVarP(&prompt, "print", "p", "", "the prompt")
	f.StringVar(&format, "output-format", "stream-json", "accepted for compatibility with claude")
	f.BoolVar(&verbose, "verbose", false, "accepted for compatibility with claude")
	return cmd
}
