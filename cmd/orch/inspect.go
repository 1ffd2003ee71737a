package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [RUN_ID]",
		Short: "Show the state of a run (default: the latest)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, err := a.pickRun(cmd, b, args, nil, false)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, shownRun(run))
			}
			a.printStatus(run)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

// pickRun returns the run named in args, or the latest run that keep accepts (among those not over, when live).
func (a *app) pickRun(cmd *cobra.Command, b *store.Backend, args []string, keep func(*jobs.Run) bool, live bool) (*jobs.Run, error) {
	if len(args) == 1 {
		return b.Store.Get(cmd.Context(), args[0])
	}
	latest := b.Store.Latest
	if live {
		latest = b.Store.LatestLive
	}
	run, err := latest(cmd.Context(), keep)
	if errors.Is(err, jobs.ErrRunNotFound) {
		return nil, withCode(exitUsage, errors.New("no runs found (start one with: orch run PLAN)"))
	}
	return run, err
}

// waitingRun is the run args name, or else the newest run with an open question, found from the index of the runs that
// wait: as fast with a hundred thousand of them as with one.
func (a *app) waitingRun(cmd *cobra.Command, b *store.Backend, args []string) (*jobs.Run, error) {
	if len(args) == 1 {
		return b.Store.Get(cmd.Context(), args[0])
	}
	for offset := 0; ; offset += 20 {
		page, more, err := b.Store.Find(cmd.Context(), store.Query{Status: store.StatusOpen}, offset, 20)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if r.OpenEscalation() != nil {
				return r, nil
			}
		}
		if !more {
			break
		}
	}
	// None is indexed as waiting: what the store says of the live runs themselves (an index still being built, an
	// older orch writing meanwhile).
	return a.pickRun(cmd, b, args, func(r *jobs.Run) bool { return r.OpenEscalation() != nil }, true)
}

func (a *app) printStatus(run *jobs.Run) {
	w := a.stdout
	usd, in, out := run.Cost()
	fmt.Fprintf(w, "Run %s: %s%s\n", run.ID, run.Status, reasonSuffix(run.Reason))
	if run.Request != "" {
		// Asked in words (Slack's /orch do, a mention): the request's first line stands for the plan.
		fmt.Fprintf(w, "  request:   %s (asked by %s in Slack)\n", run.PlanTitle, run.Origin.User)
		if run.FollowUpOf != "" {
			fmt.Fprintf(w, "  follows:   %s\n", run.FollowUpOf)
		}
	} else {
		fmt.Fprintf(w, "  plan:      %s (%s)\n", run.PlanPath, run.PlanTitle)
	}
	if len(run.FollowUps) > 0 {
		fmt.Fprintf(w, "  followed:  by %s\n", strings.Join(run.FollowUps, ", "))
	}
	fmt.Fprintf(w, "  workspace: %s\n", run.Workspace)
	printBranch(w, run)
	fmt.Fprintf(w, "  agent:     %s   brain: %s   sandbox: %s   max attempts: %d\n", run.Options.Agent, run.Options.Brain, run.Options.Sandbox, run.Options.MaxAttempts)
	fmt.Fprintf(w, "  started:   %s   duration: %s   cost: $%.4f (%d in / %d out tokens)\n",
		run.CreatedAt.Local().Format(time.DateTime), run.Duration(time.Now()).Round(time.Second), usd, in, out)
	if b := run.BudgetText(time.Now()); b != "" {
		fmt.Fprintf(w, "  budget:    %s\n", b)
	}
	if team := run.Team(); team != "" {
		fmt.Fprintf(w, "  team:      %s\n", team)
	}
	if cp := run.Pipeline; run.Graph != "" && cp != nil {
		fmt.Fprintf(w, "  pipeline:  at %s, %s", cp.Current, run.Tally())
		if cp.Last != "" {
			fmt.Fprintf(w, " (last %s: %s)", cp.Last, cp.Outcomes[cp.Last])
		}
		fmt.Fprintln(w)
	}
	printTasks(w, run)
	if e := run.OpenEscalation(); e != nil {
		fmt.Fprintf(w, "\nOpen escalation %s on task %s (%s): %s\n", e.ID, e.TaskID, e.Trigger, safetext.OneLine(e.Question, 200))
		fmt.Fprintf(w, "  orch escalation show %s\n", run.ID)
	}
}

// printTasks is the status's table of tasks: the current one marked, a pipeline's with each task's kind and the
// stages the run ended without reaching.
func printTasks(w io.Writer, run *jobs.Run) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	pipelineRun := run.Graph != ""
	if pipelineRun {
		fmt.Fprintln(tw, "\n  TASK\tKIND\tSTATUS\tATTEMPTS\tFAILURES\tTITLE")
	} else {
		fmt.Fprintln(tw, "\n  TASK\tSTATUS\tATTEMPTS\tFAILURES\tTITLE")
	}
	for i, t := range run.Tasks {
		mark := " "
		if i == run.Cursor && !run.Status.Terminal() {
			mark = ">"
		}
		failures := fmt.Sprintf("%d/%d", t.Failures, run.MaxAttempts(t))
		started := fmt.Sprint(t.Started)
		switch t.Kind {
		case jobs.KindGate:
			failures, started = "-", "-"
		case jobs.KindChat:
			failures = "-"
		}
		if !pipelineRun {
			fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\n", mark, t.ID, t.Status, started, failures, t.Title)
			continue
		}
		status := string(t.Status)
		if run.Status.Terminal() && t.Status == jobs.TaskPending && t.Visits == 0 {
			status = "not reached"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", mark, t.ID, kindName(t.Kind), status, started, failures, t.Title)
	}
}

// printNoTable prints a page of history that is no table: JSON, or that the page holds no run.
func printNoTable(w io.Writer, runs []*jobs.Run, page int, asJSON bool) error {
	if asJSON {
		shown := make([]*jobs.Run, len(runs))
		for i, r := range runs {
			shown[i] = shownRun(r)
		}
		return printJSON(w, shown)
	}
	if page > 1 {
		fmt.Fprintf(w, "No runs on page %d.\n", page)
	} else {
		fmt.Fprintln(w, "No runs yet.")
	}
	return nil
}

// printHistory is the table of runs orch history shows.
func printHistory(w io.Writer, runs []*jobs.Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tDURATION\tTASKS\tCOST\tPLAN")
	for _, r := range runs {
		usd, _, _ := r.Cost()
		tally := r.Tally()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t$%.4f\t%s\n", r.ID, r.Status, r.CreatedAt.Local().Format(time.DateTime),
			r.Duration(time.Now()).Round(time.Second), tally.Done, tally.Total, usd, planOf(r))
	}
	return tw.Flush()
}

func kindName(kind string) string {
	switch kind {
	case jobs.KindGate:
		return "human gate"
	case jobs.KindChat:
		return "interactive"
	}
	return "agent"
}

func taskTitle(r *jobs.Run, id string) string {
	if t := r.Task(id); t != nil {
		return t.Title
	}
	return ""
}

func (a *app) historyCmd() *cobra.Command {
	var asJSON, prune bool
	var limit, page int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List past runs, newest first, a page at a time (or prune them)",
		Long: "List runs, newest first: --limit runs a page, --page K for older ones.\n" +
			"With --prune, remove the finished runs that history.keep in orch.yaml (or --keep) does not keep:\n" +
			"a count (1000), an age (90d) or both (1000,90d). History is also pruned by itself, at most once an hour.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageErr("--limit must be at least 1, got %d", limit)
			}
			if page < 1 {
				return usageErr("--page must be at least 1, got %d", page)
			}
			keep, err := a.historyKeep(cmd, "keep")
			if err != nil {
				return err
			}
			if prune && keep.IsZero() {
				return usageErr("nothing says what to keep: set history.keep in orch.yaml or pass --keep (e.g. --keep 1000,90d)")
			}
			if !prune && cmd.Flags().Changed("keep") {
				return usageErr("--keep goes with --prune")
			}
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			if prune {
				return a.prune(cmd, b, keep, asJSON)
			}
			runs, err := b.Store.Page(cmd.Context(), (page-1)*limit, limit)
			if err != nil {
				return err
			}
			if asJSON || len(runs) == 0 {
				return printNoTable(a.stdout, runs, page, asJSON)
			}
			if err := printHistory(a.stdout, runs); err != nil {
				return err
			}
			if len(runs) == limit {
				fmt.Fprintf(a.stdout, "Older runs: orch history --page %d%s\n", page+1, a.stateHint(cmd))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print runs as JSON")
	f.IntVar(&limit, "limit", 20, "how many runs a page")
	f.IntVar(&page, "page", 1, "which page (1 is the newest runs)")
	f.BoolVar(&prune, "prune", false, "remove the finished runs history does not keep")
	f.String("keep", "", "with --prune: what to keep, e.g. 1000 (runs), 90d (age) or 1000,90d (default: orch.yaml history.keep)")
	return cmd
}

func (a *app) prune(cmd *cobra.Command, b *store.Backend, keep store.Keep, asJSON bool) error {
	gone, err := b.Store.Prune(cmd.Context(), keep)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, map[string]any{"pruned": gone, "keep": keep.String()})
	}
	fmt.Fprintf(a.stdout, "Pruned %s; history keeps %s.\n", jobs.Count(len(gone), "finished run"), keep)
	return nil
}

func (a *app) escalationCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "escalation", Short: "Show, resolve and audit escalations", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	cmd.AddCommand(a.escalationShowCmd(), a.escalationResolveCmd(), a.escalationLogCmd())
	return cmd
}

func (a *app) escalationShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [RUN_ID]",
		Short: "Show the open escalation of a run (default: the latest parked run)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, err := a.waitingRun(cmd, b, args)
			if err != nil {
				return err
			}
			e := run.OpenEscalation()
			if asJSON {
				return printJSON(a.stdout, map[string]any{"run_id": run.ID, "status": run.Status, "escalation": e})
			}
			if e == nil {
				fmt.Fprintf(a.stdout, "Run %s (%s) has no open escalation.\n", run.ID, run.Status)
				return nil
			}
			a.printEscalation(run, e)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func (a *app) printEscalation(run *jobs.Run, e *jobs.Escalation) {
	w := a.stdout
	r := newRenderer(w, false)
	r.escalation(e, taskTitle(run, e.TaskID), run.ID)
	fmt.Fprintf(w, "Run:        %s (%s)\n", run.ID, run.Status)
	fmt.Fprintf(w, "Escalation: %s, trigger %s, from %s, opened %s (%s ago)\n", e.ID, e.Trigger, e.Source,
		e.CreatedAt.Local().Format(time.DateTime), time.Since(e.CreatedAt).Round(time.Second))
	fmt.Fprintf(w, "Attempts:   %d started, %d failed since the last reset", e.Attempt, e.Failures)
	if e.Similarity > 0 {
		fmt.Fprintf(w, ", error similarity %.0f%%", 100*e.Similarity)
	}
	fmt.Fprintln(w)
	if len(e.Errors) > 0 {
		fmt.Fprintln(w, "Errors:")
		for i, err := range e.Errors {
			fmt.Fprintf(w, "  %d. %s\n", i+1, safetext.OneLine(err, 300))
		}
	}
	if len(e.Suggestions) > 0 {
		fmt.Fprintln(w, "Suggestions:")
		for _, s := range e.Suggestions {
			fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(s, "RUN_ID", run.ID))
		}
	}
	choose := ""
	if len(e.Options) > 0 {
		choose = "--choose KEY | "
	}
	switch e.Trigger {
	case jobs.TriggerGate:
		fmt.Fprintf(w, "Resolve:    orch escalation resolve %s (--choose KEY | --abort --reason R)\n", run.ID)
	case jobs.TriggerChat:
		fmt.Fprintf(w, "Resolve:    orch escalation resolve %s (--answer TEXT | --answer /done | --answer /approve | --answer /reject | --retry | --abort --reason R)\n", run.ID)
	default:
		fmt.Fprintf(w, "Resolve:    orch escalation resolve %s (%s--answer TEXT | --resume | --retry | --abort --reason R | --force-continue --acknowledge-risk)\n", run.ID, choose)
	}
}

func (a *app) escalationResolveCmd() *cobra.Command {
	var req escalation.Request
	var choose, answer, reason, by string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resolve RUN_ID (--choose KEY | --answer TEXT | --resume | --retry | --abort --reason R | --force-continue --acknowledge-risk)",
		Short: "Resolve a run's open escalation",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := resolutionKind(cmd)
			if err != nil {
				return err
			}
			req.RunID, req.Type, req.Key, req.Text, req.Reason = args[0], kind, choose, answer, reason
			req.By, req.Via = by, "cli"
			if req.By == "" {
				req.By = whoami()
			}
			if err := req.Validate(); err != nil {
				return withCode(exitUsage, err)
			}
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			run, e, err := escalation.Resolve(cmd.Context(), b.Store, b.Queue, req)
			if err != nil && run == nil {
				return err
			}
			if serr := a.saved(cmd.Context(), b, run.ID); serr != nil {
				return serr
			}
			if asJSON {
				return printJSON(a.stdout, map[string]any{"run_id": run.ID, "status": run.Status, "escalation": e})
			}
			fmt.Fprintf(a.stdout, "Escalation %s of run %s resolved: %s.\n", e.ID, run.ID, escalation.Describe(e, e.Resolution))
			switch {
			case run.Status == jobs.RunAborted:
				fmt.Fprintf(a.stdout, "Run %s is aborted.\n", run.ID)
			case b.Embedded != nil && b.Embedded.Owner():
				fmt.Fprintf(a.stdout, "Continue it with: orch resume %s%s\n", run.ID, a.stateHint(cmd))
			default:
				fmt.Fprintf(a.stdout, "The run continues as soon as a worker picks it up (orch resume %s%s runs one here).\n", run.ID, a.stateHint(cmd))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&choose, "choose", "", "pick the option with this key")
	f.StringVar(&answer, "answer", "", "answer in your own words; the agent gets it as guidance")
	f.Bool("resume", false, "continue as is (resets the attempt counter)")
	f.Bool("retry", false, "one more attempt (keeps the attempt counter)")
	f.Bool("abort", false, "stop the run (needs --reason)")
	f.StringVar(&reason, "reason", "", "why (with --abort or --force-continue)")
	f.Bool("force-continue", false, "mark the task done despite its error (needs --acknowledge-risk)")
	f.BoolVar(&req.AcknowledgeRisk, "acknowledge-risk", false, "confirm --force-continue")
	f.StringVar(&by, "by", "", "who is answering (default: your user name)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// resolutionKind is the one resolution the flags of `orch escalation resolve` ask for.
func resolutionKind(cmd *cobra.Command) (jobs.ResolutionType, error) {
	f := cmd.Flags()
	var kinds []jobs.ResolutionType
	for _, k := range []struct {
		flag string
		kind jobs.ResolutionType
	}{{"choose", jobs.ResolveChoose}, {"answer", jobs.ResolveAnswer}, {"resume", jobs.ResolveResume},
		{"retry", jobs.ResolveRetry}, {"abort", jobs.ResolveAbort}, {"force-continue", jobs.ResolveForce}} {
		if on, err := f.GetBool(k.flag); f.Changed(k.flag) && (err != nil || on) { // --resume=false is no resume
			kinds = append(kinds, k.kind)
		}
	}
	if len(kinds) != 1 {
		return "", usageErr("give exactly one of --choose, --answer, --resume, --retry, --abort, --force-continue")
	}
	if f.Changed("reason") && kinds[0] != jobs.ResolveAbort && kinds[0] != jobs.ResolveForce {
		return "", usageErr("--reason goes with --abort or --force-continue")
	}
	if f.Changed("acknowledge-risk") && kinds[0] != jobs.ResolveForce {
		return "", usageErr("--acknowledge-risk goes with --force-continue")
	}
	return kinds[0], nil
}

func (a *app) escalationLogCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "log [RUN_ID]",
		Short: "Print the audit trail of escalations and resolutions (default: recent runs)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			all, err := auditTrail(cmd.Context(), b.Store, args)
			if err != nil {
				return err
			}
			return printAudit(a.stdout, all, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per entry")
	return cmd
}

// auditTrail is the audit of run args[0], or of the 50 latest runs and what belongs to no run (requests refused to
// people not in ORCH_ALLOWED_USERS), oldest first.
func auditTrail(ctx context.Context, st *store.Store, args []string) ([]jobs.AuditEntry, error) {
	var ids []string
	var all []jobs.AuditEntry
	if len(args) == 1 {
		if _, err := st.Get(ctx, args[0]); err != nil {
			return nil, err
		}
		ids = args
	} else {
		runs, err := st.List(ctx, 50)
		if err != nil {
			return nil, err
		}
		for i := len(runs) - 1; i >= 0; i-- {
			ids = append(ids, runs[i].ID)
		}
		if all, err = st.AuditOutside(ctx); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		entries, err := st.Audit(ctx, id)
		if err != nil {
			return nil, err
		}
		all = append(all, entries...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all, nil
}

// printAudit prints audit entries as JSON lines or as a table.
func printAudit(w io.Writer, all []jobs.AuditEntry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range all {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintln(w, "No escalations.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tRUN\tTASK\tESC\tACTION\tWHO\tVIA\tWHAT")
	for _, e := range all {
		what := e.Detail
		if e.Trigger != "" && e.Action == "escalated" {
			what = string(e.Trigger) + ": " + what
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.DateTime), e.RunID, e.TaskID,
			e.EscalationID, e.Action, e.By, e.Via, safetext.OneLine(what, 120))
	}
	return tw.Flush()
}

// planOf names what a run ran: its plan's path, or for a run asked in words (Slack) the request's first line, quoted.
func planOf(r *jobs.Run) string {
	if r.PlanPath == "" && r.Request != "" {
		title := r.PlanTitle
		if runes := []rune(title); len(runes) > 60 {
			title = string(runes[:57]) + "…"
		}
		return "“" + title + "”"
	}
	return r.PlanPath
}
