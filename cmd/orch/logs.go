package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
)

// detached ends `orch run --detach`: the run is queued, its id is the output, and the workers sharing the store run
// it. An embedded store that this process served has no worker to run it until one starts: the person is told.
func (a *app) detached(cmd *cobra.Command, b *store.Backend, run *jobs.Run) error {
	fmt.Fprintln(a.stdout, run.ID)
	if b.Embedded != nil && b.Embedded.Owner() {
		fmt.Fprintf(a.stderr, "orch: run %s is queued in the embedded store, which no other orch process serves: it runs when "+
			"one does (orch worker, with ORCH_SANDBOX=local for local agents), or here with: orch resume %s%s\n",
			run.ID, run.ID, a.stateHint(cmd))
	}
	return nil
}

func (a *app) logsCmd() *cobra.Command {
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "logs [-f] RUN_ID",
		Short: "Print a run's events as the terminal shows them; -f follows them until the run ends",
		Long: "Print a run's events as 'orch run' shows them. With -f, keep following until the run ends\n" +
			"(exit 0 when it completed, 1 when it failed or was aborted): a run queued with 'orch run --detach'\n" +
			"and run by workers elsewhere can be watched from here. Questions are shown; answer them with\n" +
			"'orch escalation resolve' or in Slack.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, err := b.Store.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			r := newRenderer(a.stdout, asJSON)
			r.runID = run.ID
			if !follow {
				return a.printLog(cmd.Context(), b.Store, run.ID, r)
			}
			return a.followLog(cmd, b, run, r)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events until the run ends")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event")
	return cmd
}

// printLog prints a run's whole log as it is now.
func (a *app) printLog(ctx context.Context, st *store.Store, runID string, r *renderer) error {
	after := "0"
	for {
		evs, err := st.Events(ctx, runID, after, 0)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		for _, e := range evs {
			r.event(e)
			after = e.ID
		}
	}
}

// followLog prints a run's log and what it does next until it ends; its exit code is the run's.
func (a *app) followLog(cmd *cobra.Command, b *store.Backend, run *jobs.Run, r *renderer) error {
	ctx := cmd.Context()
	if b.Embedded != nil && b.Embedded.Owner() && !run.Status.Terminal() {
		fmt.Fprintf(a.stderr, "orch: no other orch process serves this state directory: run %s moves when one does "+
			"(orch resume %s%s, or orch worker)\n", run.ID, run.ID, a.stateHint(cmd))
	}
	if !r.json && isTerminal(a.stdout) {
		r.spin(a.stdout)
		defer r.stopSpinning()
	}
	r.outage = a.outage(cmd)
	for u := range runs.Follow(ctx, b.Store, run.ID, runs.FollowOptions{Patience: storePatience}) {
		r.update(u)
		switch {
		case u.Err != nil:
			return u.Err
		case u.Question != nil:
			r.note(fmt.Sprintf("Run %s waits for an answer: orch escalation show %s%s (or answer in Slack)", run.ID,
				run.ID, a.stateHint(cmd)))
		}
	}
	if err := ctx.Err(); err != nil {
		return withCode(exitSignal, errSilent)
	}
	cctx, cancel := background()
	defer cancel()
	ended, err := b.Store.Get(cctx, run.ID)
	if err != nil {
		return err
	}
	if !ended.Status.Terminal() {
		return errors.New("the run's log ended before the run did")
	}
	return terminalErr(ended)
}
