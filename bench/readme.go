package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The README's bench section lies between these markers; each run rewrites only what is between them.
const (
	markerStart = "<!-- bench:start -->"
	markerEnd   = "<!-- bench:end -->"
)

// sectionIntro opens the README section when a run creates it; it stays as edited afterwards.
const sectionIntro = "## Performance\n\n" +
	"`make bench` runs `go run ./bench`: orch's own packages on loopback with a real Redis (started by the program,\n" +
	"`appendonly yes`, `appendfsync everysec`), measured end to end. It writes `bench/results.json` — the numbers, the\n" +
	"machine, and how each number was obtained (`notes`) — and the table below. `make bench-quick` does the same with\n" +
	"small counts, in under a minute, into a scratch directory, leaving both files alone; CI runs it to check that every\n" +
	"measurement works, never its times. The Go micro-benchmarks are `make bench-go`.\n\n"

// updateReadme rewrites the bench table of the README at path.
func updateReadme(path string, r *Results, quick bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := spliceBench(string(data), benchTable(r, quick))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// spliceBench puts table between the markers, or adds the section with them before "## Layout" (at the end when
// there is no such heading).
func spliceBench(readme, table string) (string, error) {
	i, j := strings.Index(readme, markerStart), strings.Index(readme, markerEnd)
	switch {
	case i >= 0 && j > i:
		return readme[:i+len(markerStart)] + "\n" + table + readme[j:], nil
	case i >= 0 || j >= 0:
		return "", errors.New("the bench markers are out of order or one is missing")
	}
	section := sectionIntro + markerStart + "\n" + table + markerEnd + "\n\n"
	if k := strings.Index(readme, "\n## Layout\n"); k >= 0 {
		return readme[:k+1] + section + readme[k+1:], nil
	}
	if !strings.HasSuffix(readme, "\n") {
		readme += "\n"
	}
	return readme + "\n" + strings.TrimSuffix(section, "\n"), nil
}

// benchTable is the markdown between the markers: the machine line and a row per field.
func benchTable(r *Results, quick bool) string {
	var b strings.Builder
	m := r.Machine
	how := "`make bench`, one run"
	if quick {
		how = "`make bench-quick` (small counts)"
	}
	cpu := fmt.Sprintf("%d CPUs", m.CPUs)
	if m.CPUModel != "" {
		cpu += " (" + m.CPUModel + ")"
	}
	fmt.Fprintf(&b, "Measured with %s on %s, %s/%s, %s, kernel %s, Redis %s, %s; a shared, noisy machine.\n\n",
		how, cpu, m.GOOS, m.GOARCH, m.GoVersion, m.Kernel, m.RedisVersion, m.Date)
	b.WriteString("| field | value | target | met |\n|---|---|---|---|\n")
	for _, row := range rows(r) {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", row.field, row.value, row.target, row.met)
	}
	b.WriteString("\n`ack_*` is the handler's time for a request, both endpoints together; the round trip of the 200\n" +
		"clients, which share the two cores with the server, is in `notes.ack`. `github_ack_*` is the same for the GitHub\n" +
		"webhook, under a burst of `issue_comment` deliveries, and `github_resume_*` a comment `@orch B` answering a\n" +
		"question, timed as `resume_*` times a click; `notes.github_ack` and `notes.github_resume` say what their paths\n" +
		"have that Slack's do not. `overhead_ms_per_step` is a worker slot's wall time per step minus the agent process's\n" +
		"own time; `notes.overhead` splits it. `fair_share_*` is team a's share of two teams weighted 3:1, both\n" +
		"backlogged (`notes.fair_share`); the `unequal` row shows that asynq's weights share steps, not time.\n")
	return b.String()
}

type row struct{ field, value, target, met string }

// rows pairs each field with its target on this machine.
func rows(r *Results) []row {
	le := func(v, limit float64) string { return yesNo(v <= limit) }
	ratio := r.ResumeAsynqDefaultP50Ms / r.ResumeP50Ms
	growth := r.EmbeddedStatusMsAt10k / r.EmbeddedStatusMsAt100
	beyond := r.GitHubResumeP50Ms - r.ResumeP50Ms
	return []row{
		{"ack_p50_ms", num(r.AckP50Ms), "—", "—"},
		{"ack_p99_ms", num(r.AckP99Ms), "≤ 20", le(r.AckP99Ms, 20)},
		{"resume_p50_ms", num(r.ResumeP50Ms), "≤ 30", le(r.ResumeP50Ms, 30)},
		{"resume_p99_ms", num(r.ResumeP99Ms), "≤ 100", le(r.ResumeP99Ms, 100)},
		{"resume_asynq_default_p50_ms", fmt.Sprintf("%s (%.1f× `resume_p50_ms`)", num(r.ResumeAsynqDefaultP50Ms), ratio),
			"≥ 10× `resume_p50_ms`", yesNo(ratio >= 10)},
		{"github_ack_p50_ms", num(r.GitHubAckP50Ms), "—", "—"},
		{"github_ack_p99_ms", fmt.Sprintf("%s (%.2f× `ack_p99_ms`)", num(r.GitHubAckP99Ms), r.GitHubAckP99Ms/r.AckP99Ms),
			"≤ 20", le(r.GitHubAckP99Ms, 20)},
		{"github_resume_p50_ms", fmt.Sprintf("%s (`resume_p50_ms` %+.1f ms)", num(r.GitHubResumeP50Ms), beyond),
			"≤ `resume_p50_ms` + 50", le(beyond, 50)},
		{"github_resume_p90_ms", num(r.GitHubResumeP90Ms), "—", "—"},
		{"github_resume_max_ms", num(r.GitHubResumeMaxMs), "—", "—"},
		{"api_resume_p50_ms", fmt.Sprintf("%s (`resume_p50_ms` %+.1f ms)", num(r.APIResumeP50Ms), r.APIResumeP50Ms-r.ResumeP50Ms),
			"≤ `resume_p50_ms` + 5", le(r.APIResumeP50Ms-r.ResumeP50Ms, 5)},
		{"api_resume_p99_ms", num(r.APIResumeP99Ms), "—", "—"},
		{"approval_resume_p50_ms", num(r.ApprovalResumeP50Ms), "≤ 30", le(r.ApprovalResumeP50Ms, 30)},
		{"approval_resume_p99_ms", num(r.ApprovalResumeP99Ms), "—", "—"},
		{"parked_runs", fmt.Sprint(r.ParkedRuns), "10,000", yesNo(r.ParkedRuns == 10000)},
		{"parked_worker_slots_busy", fmt.Sprint(r.ParkedWorkerSlotsBusy), "0", yesNo(r.ParkedWorkerSlotsBusy == 0)},
		{"parked_redis_bytes_per_run", num(r.ParkedRedisBytesPerRun), "≤ 4096 (4 KiB)", le(r.ParkedRedisBytesPerRun, 4096)},
		{"resume_all_seconds", num(r.ResumeAllSeconds), "—", "—"},
		{"steps_per_second", fmt.Sprintf("%s (%.2f× asynq alone, %s)", num(r.StepsPerSecond), r.StepsPerSecond/r.StepsPerSecondAsynq,
			num(r.StepsPerSecondAsynq)), "≥ 0.5× asynq alone", yesNo(r.StepsPerSecond >= 0.5*r.StepsPerSecondAsynq)},
		{"agent_ms_per_step", fmt.Sprintf("%s (the command under asynq alone %s)", num(r.AgentMsPerStep), num(r.ShMsPerStep)),
			"≤ asynq's + 3", le(r.AgentMsPerStep-r.ShMsPerStep, 3)},
		{"overhead_ms_per_step", num(r.OverheadMsPerStep), "≤ 5", le(r.OverheadMsPerStep, 5)},
		{"agent_start_shim_p50_ms", fmt.Sprintf("%s (no shim %s, orch's binary as the shim %s)", num(r.AgentStartShimP50Ms),
			num(r.AgentStartP50Ms), num(r.AgentStartOrchShimP50Ms)), "≤ no shim + 3",
			le(r.AgentStartShimP50Ms-r.AgentStartP50Ms, 3)},
		{"long_plan_embedded_last_ms", fmt.Sprintf("%s (first tenth %s: %.2f×; %d tasks)", num(r.LongPlanEmbeddedLastMs),
			num(r.LongPlanEmbeddedFirstMs), r.LongPlanEmbeddedLastMs/r.LongPlanEmbeddedFirstMs, r.LongPlanTasks),
			"≤ 1.2× the first tenth", yesNo(r.LongPlanEmbeddedLastMs <= 1.2*r.LongPlanEmbeddedFirstMs)},
		{"long_plan_redis_last_ms", fmt.Sprintf("%s (first tenth %s: %.2f×)", num(r.LongPlanRedisLastMs),
			num(r.LongPlanRedisFirstMs), r.LongPlanRedisLastMs/r.LongPlanRedisFirstMs),
			"≤ 1.2× the first tenth", yesNo(r.LongPlanRedisLastMs <= 1.2*r.LongPlanRedisFirstMs)},
		{"help_start_ms", fmt.Sprintf("%s (a static Go hello %s: %.1f×)", num(r.HelpStartMs), num(r.HelloStartMs),
			r.HelpStartMs/r.HelloStartMs), "≤ 2× the hello", le(r.HelpStartMs, 2*r.HelloStartMs)},
		{"orch_binary_mb", num(r.OrchBinaryMB), "—", "—"},
		coldBuildRow(r.ColdBuildOrchSeconds, r.ColdBuildAsynqSeconds),
		{"docker_cold_start_p50_ms", optional(r.DockerColdStartP50Ms), "—", "—"},
		{"docker_warm_start_p50_ms", optional(r.DockerWarmStartP50Ms), "—", "—"},
		{"docker_repo_start_p50_ms", optional(r.DockerRepoStartP50Ms), "—", "—"},
		{"worktree_setup_p50_ms", num(r.WorktreeSetupP50Ms) + " (10,000 files)", "≤ 300", le(r.WorktreeSetupP50Ms, 300)},
		{"worktree_setup_100_files_p50_ms", num(r.WorktreeSetup100FilesP50Ms), "—", "—"},
		{"worktree_setup_cold_p50_ms", num(r.WorktreeSetupColdP50Ms) + " (10,000 files, no spare)", "—", "—"},
		{"concurrent_runs_isolated", fmt.Sprintf("%d of %d", r.ConcurrentRunsIsolated, r.ConcurrentRuns),
			"all", yesNo(r.ConcurrentRuns > 0 && r.ConcurrentRunsIsolated == r.ConcurrentRuns)},
		{"embedded_status_ms_at_10k", num(r.EmbeddedStatusMsAt10k), "≤ 100", le(r.EmbeddedStatusMsAt10k, 100)},
		{"embedded_status_ms_at_100", fmt.Sprintf("%s (10k is %.2f× this)", num(r.EmbeddedStatusMsAt100), growth),
			"10k ≤ 1.5× this", yesNo(growth <= 1.5)},
		{"embedded_run_start_ms_at_10k", num(r.EmbeddedRunStartMsAt10k), "≤ 250", le(r.EmbeddedRunStartMsAt10k, 250)},
		{"embedded_state_bytes_per_finished_run", num(r.EmbeddedStateBytesPerFinishedRun), "—", "—"},
		{"web_runs_page_ms_at_10k", num(r.WebRunsPageMsAt10k), "≤ 50", le(r.WebRunsPageMsAt10k, 50)},
		{"web_runs_filtered_ms_at_10k", num(r.WebRunsFilteredMsAt10k), "—", "—"},
		{"web_run_page_ms", num(r.WebRunPageMs), "—", "—"},
		{"api_runs_p50_ms_at_10k", num(r.APIRunsP50MsAt10k), "≤ 50", le(r.APIRunsP50MsAt10k, 50)},
		{"api_runs_p99_ms_at_10k", num(r.APIRunsP99MsAt10k), "≤ 50", le(r.APIRunsP99MsAt10k, 50)},
		{"questions_page_ms_at_10k", num(r.QuestionsPageMsAt10k), "≤ 50", le(r.QuestionsPageMsAt10k, 50)},
		{"questions_page_ms_at_1k", fmt.Sprintf("%s (10k is %.2f× this)", num(r.QuestionsPageMsAt1k),
			r.QuestionsPageMsAt10k/r.QuestionsPageMsAt1k), "10k ≤ 1.5× this", yesNo(r.QuestionsPageMsAt10k <= 1.5*r.QuestionsPageMsAt1k)},
		{"questions_api_ms_at_10k", num(r.QuestionsAPIMsAt10k), "≤ 50", le(r.QuestionsAPIMsAt10k, 50)},
		{"escalation_show_lookup_ms_at_10k", num(r.EscalationShowLookupMsAt10k), "≤ 50", le(r.EscalationShowLookupMsAt10k, 50)},
		peakRSSRow(r.RunRSS200MBOutputMB),
		{"rescue_p50_seconds", num(r.RescueP50Seconds) + " (a SIGKILLed worker's step, to its next attempt)", "≤ 10",
			le(r.RescueP50Seconds, 10)},
		{"crash_tasks_completed_twice", fmt.Sprintf("%d of %d task completions (%d trials)", r.CrashTasksCompletedTwice,
			r.CrashTaskCompletions, r.CrashTrials), "0", yesNo(r.CrashTasksCompletedTwice == 0)},
		{"fair_share_time_a_pct", fmt.Sprintf("%s (team b %s; steps %s/%s of %d)", num(r.FairShareTimeAPct),
			num(100-r.FairShareTimeAPct), num(r.FairShareStepsAPct), num(100-r.FairShareStepsAPct), r.FairShareSteps),
			"75 ± 5 (weights 3:1)", yesNo(fairShareOK(r.FairShareTimeAPct))},
		{"fair_share_unequal_time_a_pct", fmt.Sprintf("%s (steps %s; team b's agent sleeps 3× as long)",
			num(r.FairShareUnequalTimeAPct), num(r.FairShareUnequalStepsAPct)), "—", "—"},
	}
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// num prints a measured value with the digits that mean something here.
func num(v float64) string {
	switch a := abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func optional(v *float64) string {
	if v == nil {
		return "null (no Docker engine)"
	}
	return num(*v)
}

// peakRSSRow is orch run's peak memory under 200 MB of agent output, which only Linux reports to the bench.
func peakRSSRow(v *float64) row {
	if v == nil {
		return row{"run_rss_200mb_output_mb", "null (not measured on this OS)", "≤ 150", "—"}
	}
	return row{"run_rss_200mb_output_mb", num(*v), "≤ 150", yesNo(*v <= 150)}
}

// coldBuildRow is cmd/orch's cold build against a minimal asynq program's, which quick mode does not make.
func coldBuildRow(orch, asynq *float64) row {
	if orch == nil || asynq == nil {
		return row{"cold_build_orch_seconds", "null (not made in quick mode)", "≤ 1.3× asynq's", "—"}
	}
	return row{"cold_build_orch_seconds", fmt.Sprintf("%s (a minimal asynq program %s: %.2f×)", num(*orch), num(*asynq),
		*orch / *asynq), "≤ 1.3× asynq's", yesNo(*orch <= 1.3**asynq)}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
