package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Results is bench/results.json. Times are in milliseconds unless the name says otherwise; the Docker times are null
// when no engine answered.
type Results struct {
	AckP50Ms                float64 `json:"ack_p50_ms"`
	AckP99Ms                float64 `json:"ack_p99_ms"`
	ResumeP50Ms             float64 `json:"resume_p50_ms"`
	ResumeP99Ms             float64 `json:"resume_p99_ms"`
	ResumeAsynqDefaultP50Ms float64 `json:"resume_asynq_default_p50_ms"`
	// GitHubAckP50Ms is the GitHub webhook's ack under the same burst as Slack's (issue_comment deliveries);
	// GitHubResumeP50Ms a comment answering a question to the resumed agent, as ResumeP50Ms is a click.
	GitHubAckP50Ms    float64 `json:"github_ack_p50_ms"`
	GitHubAckP99Ms    float64 `json:"github_ack_p99_ms"`
	GitHubResumeP50Ms float64 `json:"github_resume_p50_ms"`
	GitHubResumeP90Ms float64 `json:"github_resume_p90_ms"`
	GitHubResumeMaxMs float64 `json:"github_resume_max_ms"`
	// APIResumeP50Ms is an answer POSTed to the HTTP API to the resumed agent, as ResumeP50Ms is a click.
	APIResumeP50Ms float64 `json:"api_resume_p50_ms"`
	APIResumeP99Ms float64 `json:"api_resume_p99_ms"`
	// ApprovalResumeP50Ms is a click on a claude agent's tool-call approval to its resumed process starting.
	ApprovalResumeP50Ms    float64 `json:"approval_resume_p50_ms"`
	ApprovalResumeP99Ms    float64 `json:"approval_resume_p99_ms"`
	ParkedRuns             int     `json:"parked_runs"`
	ParkedWorkerSlotsBusy  int     `json:"parked_worker_slots_busy"`
	ParkedRedisBytesPerRun float64 `json:"parked_redis_bytes_per_run"`
	ResumeAllSeconds       float64 `json:"resume_all_seconds"`
	StepsPerSecond         float64 `json:"steps_per_second"`
	// StepsPerSecondAsynq is asynq alone running the no-op agent's command per task in the same run, before and after
	// orch's steps (the mean of the two); AgentMsPerStep is the no-op agent's own time in orch's steps and ShMsPerStep
	// the same command's under asynq.
	StepsPerSecondAsynq float64 `json:"steps_per_second_asynq"`
	AgentMsPerStep      float64 `json:"agent_ms_per_step"`
	ShMsPerStep         float64 `json:"sh_ms_per_step"`
	// AgentStartP50Ms is the no-op agent's process through the local sandbox with no shim; ShimP50Ms behind
	// orch-shim, OrchShimP50Ms behind orch's own binary as the shim.
	AgentStartP50Ms         float64  `json:"agent_start_p50_ms"`
	AgentStartShimP50Ms     float64  `json:"agent_start_shim_p50_ms"`
	AgentStartOrchShimP50Ms float64  `json:"agent_start_orch_shim_p50_ms"`
	OverheadMsPerStep       float64  `json:"overhead_ms_per_step"`
	DockerColdStartP50Ms    *float64 `json:"docker_cold_start_p50_ms"`
	DockerWarmStartP50Ms    *float64 `json:"docker_warm_start_p50_ms"`
	// DockerRepoStartP50Ms is a run in a repository: its worktree and the repository's objects, never from the pool.
	DockerRepoStartP50Ms *float64 `json:"docker_repo_start_p50_ms"`
	// WorktreeSetupP50Ms is a run's worktree on a repository of 10,000 files; the 100-file one beside it.
	WorktreeSetupP50Ms         float64 `json:"worktree_setup_p50_ms"`
	WorktreeSetup100FilesP50Ms float64 `json:"worktree_setup_100_files_p50_ms"`
	// WorktreeSetupColdP50Ms is the 10,000-file worktree checked out anew: no spare to take.
	WorktreeSetupColdP50Ms float64 `json:"worktree_setup_cold_p50_ms"`
	// ConcurrentRuns started at once on one repository, all writing the same file; ConcurrentRunsIsolated of their
	// branches held exactly their own work.
	ConcurrentRuns         int `json:"concurrent_runs"`
	ConcurrentRunsIsolated int `json:"concurrent_runs_isolated"`
	// EmbeddedStatusMsAt10k is `orch status` in a workspace whose embedded store holds 10,000 finished runs and 10
	// parked ones; EmbeddedStatusMsAt100 the same with 100 finished runs.
	EmbeddedStatusMsAt10k float64 `json:"embedded_status_ms_at_10k"`
	EmbeddedStatusMsAt100 float64 `json:"embedded_status_ms_at_100"`
	// EmbeddedRunStartMsAt10k is `orch run` starting to its agent process starting, in the 10,000-run workspace.
	EmbeddedRunStartMsAt10k          float64 `json:"embedded_run_start_ms_at_10k"`
	EmbeddedStateBytesPerFinishedRun float64 `json:"embedded_state_bytes_per_finished_run"`
	// WebRunsPageMsAt10k is the server time (its Server-Timing) of the web view's runs page, newest 50, in the
	// 10,000-run workspace; WebRunsFilteredMsAt10k the same filtered by status, at page 20; WebRunPageMs a run's page.
	WebRunsPageMsAt10k     float64 `json:"web_runs_page_ms_at_10k"`
	WebRunsFilteredMsAt10k float64 `json:"web_runs_filtered_ms_at_10k"`
	WebRunPageMs           float64 `json:"web_run_page_ms"`
	// APIRunsP50MsAt10k and APIRunsP99MsAt10k are GET /api/v1/runs (newest 50) in the 10,000-run workspace, as its
	// client sees it on loopback.
	APIRunsP50MsAt10k float64 `json:"api_runs_p50_ms_at_10k"`
	APIRunsP99MsAt10k float64 `json:"api_runs_p99_ms_at_10k"`
	// QuestionsPageMsAt10k is the web view's /questions page (its oldest 50) with 10,000 runs waiting, in process;
	// QuestionsPageMsAt1k the same with 1,000; QuestionsAPIMsAt10k GET /api/v1/questions (a page of 100);
	// EscalationShowLookupMsAt10k finding the newest run with an open question (`orch escalation show`).
	QuestionsPageMsAt10k        float64 `json:"questions_page_ms_at_10k"`
	QuestionsPageMsAt1k         float64 `json:"questions_page_ms_at_1k"`
	QuestionsAPIMsAt10k         float64 `json:"questions_api_ms_at_10k"`
	EscalationShowLookupMsAt10k float64 `json:"escalation_show_lookup_ms_at_10k"`
	// RunRSS200MBOutputMB is orch run's peak resident memory, in MiB, while its agent prints 200 MB (the largest of
	// three shapes of output); null where the OS does not report it.
	RunRSS200MBOutputMB *float64 `json:"run_rss_200mb_output_mb"`
	// RescueP50Seconds is a worker SIGKILLed mid-task to its step's next attempt starting on another worker.
	RescueP50Seconds float64 `json:"rescue_p50_seconds"`
	// CrashTasksCompletedTwice counts the tasks whose agent completed twice in CrashTrials trials of two runs on one
	// embedded state directory, one SIGKILLed at random and resumed.
	CrashTrials              int `json:"crash_trials"`
	CrashTaskCompletions     int `json:"crash_task_completions"`
	CrashTasksCompletedTwice int `json:"crash_tasks_completed_twice"`
	// FairShareTimeAPct is team a's percentage of the worker time when teams a and b, weighted 3:1, are both
	// backlogged with steps of equal length; FairShareStepsAPct its percentage of the steps, of FairShareSteps. The
	// Unequal pair is the same with team b's steps three times as long: asynq's weights share dequeues, not time.
	FairShareTimeAPct         float64 `json:"fair_share_time_a_pct"`
	FairShareStepsAPct        float64 `json:"fair_share_steps_a_pct"`
	FairShareSteps            int     `json:"fair_share_steps"`
	FairShareUnequalTimeAPct  float64 `json:"fair_share_unequal_time_a_pct"`
	FairShareUnequalStepsAPct float64 `json:"fair_share_unequal_steps_a_pct"`
	// OrchBinaryMB is the size of `make build`'s orch; HelpStartMs `orch help`'s start to exit and HelloStartMs a static
	// Go program's that does nothing, in the same run; ColdBuild* the cold builds of cmd/orch and of a minimal asynq
	// program (null in quick mode, which skips them).
	OrchBinaryMB          float64  `json:"orch_binary_mb"`
	HelpStartMs           float64  `json:"help_start_ms"`
	HelloStartMs          float64  `json:"hello_start_ms"`
	ColdBuildOrchSeconds  *float64 `json:"cold_build_orch_seconds"`
	ColdBuildAsynqSeconds *float64 `json:"cold_build_asynq_seconds"`
	// LongPlan* are a plan of LongPlanTasks no-op tasks run by orch run: the mean ms between task completions over
	// its first and its last tenth, on the embedded store and on Redis.
	LongPlanTasks           int     `json:"long_plan_tasks"`
	LongPlanEmbeddedFirstMs float64 `json:"long_plan_embedded_first_ms"`
	LongPlanEmbeddedLastMs  float64 `json:"long_plan_embedded_last_ms"`
	LongPlanRedisFirstMs    float64 `json:"long_plan_redis_first_ms"`
	LongPlanRedisLastMs     float64 `json:"long_plan_redis_last_ms"`
	Machine                 Machine `json:"machine"`
	Notes                   Notes   `json:"notes"`
}

// Machine is where the numbers were measured.
type Machine struct {
	CPUs         int    `json:"cpus"`
	CPUModel     string `json:"cpu_model,omitempty"`
	GOOS         string `json:"goos"`
	GOARCH       string `json:"goarch"`
	GoVersion    string `json:"go_version"`
	Kernel       string `json:"kernel"`
	RedisVersion string `json:"redis_version"`
	Date         string `json:"date"`
}

// Notes say how each number was obtained.
type Notes struct {
	Mode         string `json:"mode"`
	Redis        string `json:"redis"`
	Ack          string `json:"ack"`
	Resume       string `json:"resume"`
	GitHubAck    string `json:"github_ack"`
	GitHubResume string `json:"github_resume"`
	APIResume    string `json:"api_resume"`
	API          string `json:"api"`
	Approval     string `json:"approval"`
	Parked       string `json:"parked"`
	ResumeAll    string `json:"resume_all"`
	Steps        string `json:"steps"`
	Overhead     string `json:"overhead"`
	AgentStart   string `json:"agent_start"`
	Docker       string `json:"docker"`
	Worktrees    string `json:"worktrees"`
	History      string `json:"history"`
	Web          string `json:"web"`
	Output       string `json:"output"`
	Rescue       string `json:"rescue"`
	Crash        string `json:"crash"`
	FairShare    string `json:"fair_share"`
	Questions    string `json:"questions"`
	Binary       string `json:"binary"`
	LongPlan     string `json:"long_plan"`
	// FairShareUnequal is the fair share with steps of unequal length.
	FairShareUnequal string `json:"fair_share_unequal"`
}

func machine(redisVersion string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
		RedisVersion: redisVersion, Date: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.CPUModel = cpuModel()
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// check says what is wrong with results that a correct run cannot produce. It judges no time against a target:
// that is the README table's job, and a shared CI machine's times say little.
func (r *Results) check(wantParked int) error {
	var errs []error
	positive := map[string]float64{
		"ack_p50_ms": r.AckP50Ms, "ack_p99_ms": r.AckP99Ms, "resume_p50_ms": r.ResumeP50Ms,
		"resume_p99_ms": r.ResumeP99Ms, "resume_asynq_default_p50_ms": r.ResumeAsynqDefaultP50Ms,
		"github_ack_p50_ms": r.GitHubAckP50Ms, "github_ack_p99_ms": r.GitHubAckP99Ms, "github_resume_p50_ms": r.GitHubResumeP50Ms,
		"github_resume_p90_ms": r.GitHubResumeP90Ms, "github_resume_max_ms": r.GitHubResumeMaxMs,
		"approval_resume_p50_ms": r.ApprovalResumeP50Ms, "approval_resume_p99_ms": r.ApprovalResumeP99Ms,
		"parked_redis_bytes_per_run": r.ParkedRedisBytesPerRun, "resume_all_seconds": r.ResumeAllSeconds,
		"steps_per_second": r.StepsPerSecond, "steps_per_second_asynq": r.StepsPerSecondAsynq,
		"agent_ms_per_step": r.AgentMsPerStep, "sh_ms_per_step": r.ShMsPerStep, "worktree_setup_p50_ms": r.WorktreeSetupP50Ms,
		"worktree_setup_100_files_p50_ms": r.WorktreeSetup100FilesP50Ms, "worktree_setup_cold_p50_ms": r.WorktreeSetupColdP50Ms,
		"embedded_status_ms_at_10k": r.EmbeddedStatusMsAt10k, "embedded_status_ms_at_100": r.EmbeddedStatusMsAt100,
		"embedded_run_start_ms_at_10k":          r.EmbeddedRunStartMsAt10k,
		"embedded_state_bytes_per_finished_run": r.EmbeddedStateBytesPerFinishedRun,
		"web_runs_page_ms_at_10k":               r.WebRunsPageMsAt10k, "web_runs_filtered_ms_at_10k": r.WebRunsFilteredMsAt10k,
		"web_run_page_ms": r.WebRunPageMs, "rescue_p50_seconds": r.RescueP50Seconds,
		"api_resume_p50_ms": r.APIResumeP50Ms, "api_resume_p99_ms": r.APIResumeP99Ms,
		"api_runs_p50_ms_at_10k": r.APIRunsP50MsAt10k, "api_runs_p99_ms_at_10k": r.APIRunsP99MsAt10k,
		"questions_page_ms_at_10k": r.QuestionsPageMsAt10k, "questions_page_ms_at_1k": r.QuestionsPageMsAt1k,
		"questions_api_ms_at_10k": r.QuestionsAPIMsAt10k, "escalation_show_lookup_ms_at_10k": r.EscalationShowLookupMsAt10k,
		"orch_binary_mb": r.OrchBinaryMB, "help_start_ms": r.HelpStartMs, "hello_start_ms": r.HelloStartMs,
		"long_plan_embedded_first_ms": r.LongPlanEmbeddedFirstMs, "long_plan_embedded_last_ms": r.LongPlanEmbeddedLastMs,
		"long_plan_redis_first_ms": r.LongPlanRedisFirstMs, "long_plan_redis_last_ms": r.LongPlanRedisLastMs,
	}
	for name, v := range positive {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			errs = append(errs, fmt.Errorf("%s = %v: want a positive number", name, v))
		}
	}
	errs = append(errs, r.checkGitHub()...)
	return errors.Join(append(errs, r.checkCounts(wantParked)...)...)
}

// checkCounts checks what is no plain positive number: the step overhead, percentiles in order, counts in range,
// the Docker times all or none.
func (r *Results) checkCounts(wantParked int) []error {
	var errs []error
	if math.IsNaN(r.OverheadMsPerStep) || math.IsInf(r.OverheadMsPerStep, 0) {
		errs = append(errs, fmt.Errorf("overhead_ms_per_step = %v", r.OverheadMsPerStep))
	}
	if r.AckP50Ms > r.AckP99Ms || r.ResumeP50Ms > r.ResumeP99Ms || r.ApprovalResumeP50Ms > r.ApprovalResumeP99Ms ||
		r.APIResumeP50Ms > r.APIResumeP99Ms || r.APIRunsP50MsAt10k > r.APIRunsP99MsAt10k {
		errs = append(errs, errors.New("a p50 above its p99"))
	}
	if r.ParkedRuns != wantParked {
		errs = append(errs, fmt.Errorf("parked_runs = %d, want %d", r.ParkedRuns, wantParked))
	}
	if r.ConcurrentRuns < 1 || r.ConcurrentRunsIsolated < 0 || r.ConcurrentRunsIsolated > r.ConcurrentRuns {
		errs = append(errs, fmt.Errorf("concurrent_runs_isolated = %d of %d", r.ConcurrentRunsIsolated, r.ConcurrentRuns))
	}
	if r.CrashTrials < 1 || r.CrashTasksCompletedTwice < 0 {
		errs = append(errs, fmt.Errorf("crash_tasks_completed_twice = %d in %d trials", r.CrashTasksCompletedTwice, r.CrashTrials))
	}
	// Both teams were backlogged: each had some of the time and some of the steps.
	for name, v := range map[string]float64{"fair_share_time_a_pct": r.FairShareTimeAPct,
		"fair_share_steps_a_pct": r.FairShareStepsAPct, "fair_share_unequal_time_a_pct": r.FairShareUnequalTimeAPct,
		"fair_share_unequal_steps_a_pct": r.FairShareUnequalStepsAPct} {
		if !(v > 0 && v < 100) {
			errs = append(errs, fmt.Errorf("%s = %v: want a share between 0 and 100 (both teams ran)", name, v))
		}
	}
	if r.ParkedWorkerSlotsBusy < 0 {
		errs = append(errs, fmt.Errorf("parked_worker_slots_busy = %d", r.ParkedWorkerSlotsBusy))
	}
	if (r.ColdBuildOrchSeconds == nil) != (r.ColdBuildAsynqSeconds == nil) {
		errs = append(errs, errors.New("one cold build without the other"))
	}
	for _, v := range []*float64{r.ColdBuildOrchSeconds, r.ColdBuildAsynqSeconds} {
		if v != nil && !(*v > 0) {
			errs = append(errs, fmt.Errorf("a cold build of %v s", *v))
		}
	}
	if v := r.RunRSS200MBOutputMB; v != nil && !(*v > 0) {
		errs = append(errs, fmt.Errorf("run_rss_200mb_output_mb = %v", *v))
	}
	return append(errs, r.checkDocker()...)
}

// checkGitHub checks the GitHub surface's percentiles are in order.
func (r *Results) checkGitHub() []error {
	if r.GitHubAckP50Ms > r.GitHubAckP99Ms || r.GitHubResumeP50Ms > r.GitHubResumeP90Ms ||
		r.GitHubResumeP90Ms > r.GitHubResumeMaxMs {
		return []error{errors.New("a GitHub percentile above a higher one")}
	}
	return nil
}

// checkDocker checks the Docker times: all or none (no engine), each positive.
func (r *Results) checkDocker() []error {
	var errs []error
	if (r.DockerColdStartP50Ms == nil) != (r.DockerWarmStartP50Ms == nil) || (r.DockerColdStartP50Ms == nil) != (r.DockerRepoStartP50Ms == nil) {
		errs = append(errs, errors.New("one Docker time without the others"))
	}
	for _, v := range []*float64{r.DockerColdStartP50Ms, r.DockerWarmStartP50Ms, r.DockerRepoStartP50Ms} {
		if v != nil && !(*v > 0) {
			errs = append(errs, fmt.Errorf("a Docker time of %v ms", *v))
		}
	}
	return errs
}

// write saves the results as indented JSON.
func (r *Results) write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
