package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestSpliceBenchCreatesSectionBeforeLayout(t *testing.T) {
	readme := "# orch\n\nIntro.\n\n## Layout\n\nTable.\n"
	out, err := spliceBench(readme, "TABLE\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# orch\n\nIntro.\n\n" + sectionIntro + markerStart + "\nTABLE\n" + markerEnd + "\n\n## Layout\n\nTable.\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestSpliceBenchAppendsWithoutLayout(t *testing.T) {
	out, err := spliceBench("# orch\n", "TABLE\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "# orch\n\n## Performance\n") || !strings.HasSuffix(out, markerEnd+"\n") {
		t.Errorf("got\n%s", out)
	}
}

func TestSpliceBenchReplacesOnlyBetweenMarkers(t *testing.T) {
	readme := "before\n" + markerStart + "\nold table\n" + markerEnd + "\nafter\n"
	out, err := spliceBench(readme, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\n" + markerStart + "\nnew table\n" + markerEnd + "\nafter\n"; out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	again, _ := spliceBench(out, "new table\n")
	if again != out {
		t.Error("a second run with the same table changed the README")
	}
}

func TestSpliceBenchRefusesBrokenMarkers(t *testing.T) {
	for _, readme := range []string{markerStart + "\n", markerEnd + "\n" + markerStart + "\n"} {
		if _, err := spliceBench(readme, "t\n"); err == nil {
			t.Errorf("no error for %q", readme)
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]float64{0.5: 50, 0.99: 99, 1: 100, 0.001: 1} {
		if got := percentileMs(s, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if !math.IsNaN(percentileMs(nil, 0.5)) {
		t.Error("no samples should give NaN")
	}
}

func TestCheckRejectsWhatNoCorrectRunProduces(t *testing.T) {
	cold, warm, repo := 300.0, 90.0, 320.0
	build, anchor := 90.0, 26.0
	good := Results{AckP50Ms: 0.02, AckP99Ms: 0.2, ResumeP50Ms: 21, ResumeP99Ms: 45, ResumeAsynqDefaultP50Ms: 1000,
		GitHubAckP50Ms: 0.03, GitHubAckP99Ms: 0.3, GitHubResumeP50Ms: 25, GitHubResumeP90Ms: 40, GitHubResumeMaxMs: 60,
		APIResumeP50Ms: 22, APIResumeP99Ms: 44, APIRunsP50MsAt10k: 3, APIRunsP99MsAt10k: 6, QuestionsPageMsAt10k: 7, QuestionsPageMsAt1k: 7,
		QuestionsAPIMsAt10k: 6, EscalationShowLookupMsAt10k: 1,
		ApprovalResumeP50Ms: 24, ApprovalResumeP99Ms: 60,
		ParkedRuns: 10, ParkedRedisBytesPerRun: 3000, ResumeAllSeconds: 1, StepsPerSecond: 300,
		OverheadMsPerStep: 2, DockerColdStartP50Ms: &cold, DockerWarmStartP50Ms: &warm, DockerRepoStartP50Ms: &repo,
		WorktreeSetupP50Ms:         120,
		WorktreeSetup100FilesP50Ms: 15, WorktreeSetupColdP50Ms: 700, ConcurrentRuns: 16, ConcurrentRunsIsolated: 16,
		EmbeddedStatusMsAt10k: 40, EmbeddedStatusMsAt100: 35, EmbeddedRunStartMsAt10k: 150, EmbeddedStateBytesPerFinishedRun: 2500,
		WebRunsPageMsAt10k: 20, WebRunsFilteredMsAt10k: 30, WebRunPageMs: 5, RescueP50Seconds: 6, CrashTrials: 50,
		FairShareTimeAPct: 75, FairShareStepsAPct: 75, FairShareSteps: 2000, FairShareUnequalTimeAPct: 50,
		FairShareUnequalStepsAPct: 75, StepsPerSecondAsynq: 1400, AgentMsPerStep: 3.6, ShMsPerStep: 0.9,
		OrchBinaryMB: 84, HelpStartMs: 7, HelloStartMs: 1.1, ColdBuildOrchSeconds: &build, ColdBuildAsynqSeconds: &anchor,
		LongPlanTasks: 1000, LongPlanEmbeddedFirstMs: 100, LongPlanEmbeddedLastMs: 180, LongPlanRedisFirstMs: 90, LongPlanRedisLastMs: 95}
	if err := good.check(10); err != nil {
		t.Fatalf("good results rejected: %v", err)
	}
	// A target missed is no error: only the README says so.
	slow := good
	slow.ResumeP50Ms, slow.ResumeP99Ms, slow.ParkedWorkerSlotsBusy = 500, 900, 2
	if err := slow.check(10); err != nil {
		t.Errorf("missed targets rejected: %v", err)
	}
	for name, bad := range map[string]func(r *Results){
		"parked count":  func(r *Results) { r.ParkedRuns = 9 },
		"NaN":           func(r *Results) { r.AckP99Ms = math.NaN() },
		"zero rate":     func(r *Results) { r.StepsPerSecond = 0 },
		"p50 > p99":     func(r *Results) { r.ResumeP50Ms = 50 },
		"p90 > max":     func(r *Results) { r.GitHubResumeP90Ms = 70 },
		"no comment":    func(r *Results) { r.GitHubResumeP50Ms = 0 },
		"api p50 > p99": func(r *Results) { r.APIRunsP50MsAt10k = 7 },
		"no api answer": func(r *Results) { r.APIResumeP50Ms = 0 },
		"half docker":   func(r *Results) { r.DockerWarmStartP50Ms = nil },
		"no worktree":   func(r *Results) { r.WorktreeSetupP50Ms = 0 },
		"more held":     func(r *Results) { r.ConcurrentRunsIsolated = 17 },
		"no rescue":     func(r *Results) { r.RescueP50Seconds = 0 },
		"no trials":     func(r *Results) { r.CrashTrials = 0 },
		"one team only": func(r *Results) { r.FairShareTimeAPct = 100 },
		"no anchor":     func(r *Results) { r.StepsPerSecondAsynq = 0 },
		"no hello":      func(r *Results) { r.HelloStartMs = 0 },
		"half build":    func(r *Results) { r.ColdBuildAsynqSeconds = nil },
		"no long plan":  func(r *Results) { r.LongPlanRedisLastMs = 0 },
	} {
		r := good
		bad(&r)
		if r.check(10) == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
