package api

import (
	"net/url"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// RunSummary is a run as a list shows it.
type RunSummary struct {
	RunID      string     `json:"run_id"`
	Status     string     `json:"status"`
	Title      string     `json:"title"`
	Plan       string     `json:"plan,omitempty"`
	Request    string     `json:"request,omitempty"`
	Agent      string     `json:"agent"`
	StartedBy  string     `json:"started_by,omitempty"`
	Origin     string     `json:"origin"`
	CreatedAt  time.Time  `json:"created_at"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	DurationS  float64    `json:"duration_s"`
	TasksDone  int        `json:"tasks_done"`
	TasksTotal int        `json:"tasks_total"`
	CostUSD    float64    `json:"cost_usd"`
	Branch     string     `json:"branch,omitempty"`
	// Waiting is set when the run waits for an answer: its open question's id.
	Waiting string `json:"waiting,omitempty"`
	URL     string `json:"url,omitempty"`
}

// RunDetail is one run in full: its summary, tasks, work and open question.
type RunDetail struct {
	RunSummary
	Reason     string     `json:"reason,omitempty"`
	FollowUpOf string     `json:"follow_up_of,omitempty"`
	Tasks      []TaskView `json:"tasks"`
	Git        *GitView   `json:"git,omitempty"`
	Question   *Question  `json:"question,omitempty"`
	Answered   []Answered `json:"answered,omitempty"`
	TokensIn   int64      `json:"tokens_in"`
	TokensOut  int64      `json:"tokens_out"`
	Budget     string     `json:"budget,omitempty"`
	Team       string     `json:"team,omitempty"`
}

// TaskView is one task of a run.
type TaskView struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// Latest is what its latest attempt said or failed with, bounded.
	Latest string `json:"latest,omitempty"`
}

// GitView is where a run's work is.
type GitView struct {
	Branch       string `json:"branch"`
	Base         string `json:"base,omitempty"`
	BaseCommit   string `json:"base_commit,omitempty"`
	Head         string `json:"head,omitempty"`
	Commits      int    `json:"commits"`
	FilesChanged int    `json:"files_changed"`
	Insertions   int    `json:"insertions"`
	Deletions    int    `json:"deletions"`
	PullRequest  string `json:"pull_request,omitempty"`
}

// Question is a run's open question and how it can be answered.
type Question struct {
	RunID          string        `json:"run_id"`
	EscalationID   string        `json:"escalation_id"`
	TaskID         string        `json:"task_id"`
	Task           string        `json:"task"`
	Trigger        string        `json:"trigger"`
	Why            string        `json:"why"`
	Question       string        `json:"question"`
	Options        []jobs.Option `json:"options"`
	Recommendation string        `json:"recommendation,omitempty"`
	// Answers are the kinds of answer the question takes: choose (when it has options), answer, retry, resume,
	// force, abort.
	Answers   []string  `json:"answers"`
	Error     string    `json:"error,omitempty"`
	Output    string    `json:"output,omitempty"`
	Files     []string  `json:"files,omitempty"`
	Diffstat  string    `json:"diffstat,omitempty"`
	AskedAt   time.Time `json:"asked_at"`
	WaitingS  float64   `json:"waiting_s"`
	RunStatus string    `json:"run_status"`
	URL       string    `json:"url,omitempty"`
}

// Answered is a question of the run that was answered.
type Answered struct {
	EscalationID string    `json:"escalation_id"`
	TaskID       string    `json:"task_id"`
	Trigger      string    `json:"trigger"`
	Answer       string    `json:"answer"`
	By           string    `json:"by"`
	Via          string    `json:"via"`
	At           time.Time `json:"at"`
}

// maxLatest bounds a task's latest line in a view.
const maxLatest = 300

func (s *Server) summary(r *jobs.Run, now time.Time) RunSummary {
	usd, _, _ := r.Cost()
	v := RunSummary{RunID: r.ID, Status: string(r.Status), Title: safetext.Redact(r.PlanTitle), Plan: r.PlanPath,
		Request: safetext.Redact(r.Request), Agent: r.Options.Agent, StartedBy: r.Origin.User, Origin: r.Origin.Kind,
		CreatedAt: r.CreatedAt.UTC(), DurationS: r.Duration(now).Round(time.Millisecond).Seconds(),
		TasksTotal: len(r.Tasks), CostUSD: cents(usd), URL: s.pageOf(r.ID)}
	if !r.EndedAt.IsZero() {
		t := r.EndedAt.UTC()
		v.EndedAt = &t
	}
	for _, t := range r.Tasks {
		if t.Status == jobs.TaskCompleted {
			v.TasksDone++
		}
	}
	if r.Git != nil {
		v.Branch = r.Git.Branch
	}
	if e := r.OpenEscalation(); e != nil && !r.Status.Terminal() {
		v.Waiting = e.ID
	}
	return v
}

func (s *Server) detail(r *jobs.Run, now time.Time) RunDetail {
	_, in, out := r.Cost()
	d := RunDetail{RunSummary: s.summary(r, now), Reason: safetext.Redact(r.Reason), FollowUpOf: r.FollowUpOf,
		TokensIn: in, TokensOut: out, Tasks: []TaskView{}, Budget: r.BudgetText(now), Team: r.Team()}
	for _, t := range r.Tasks {
		tv := TaskView{ID: t.ID, Title: safetext.Redact(t.Title), Status: string(t.Status), Attempts: len(t.Attempts)}
		if n := len(t.Attempts); n > 0 {
			a := t.Attempts[n-1]
			latest := a.Error
			if latest == "" {
				latest = a.Summary
			}
			tv.Latest = safetext.OneLine(safetext.Redact(latest), maxLatest)
		}
		d.Tasks = append(d.Tasks, tv)
	}
	if g := r.Git; g != nil {
		d.Git = &GitView{Branch: g.Branch, Base: g.Base, BaseCommit: g.BaseCommit, Head: g.Head, Commits: g.Commits,
			FilesChanged: g.FilesChanged, Insertions: g.Insertions, Deletions: g.Deletions, PullRequest: g.PullRequest}
	}
	if e := r.OpenEscalation(); e != nil && !r.Status.Terminal() {
		q := s.questionOf(r, e, now)
		d.Question = &q
	}
	for _, e := range r.Escalations {
		if res := e.Resolution; res != nil {
			d.Answered = append(d.Answered, Answered{EscalationID: e.ID, TaskID: e.TaskID, Trigger: string(e.Trigger),
				Answer: safetext.Redact(escalation.Describe(e, res)), By: res.By, Via: res.Via, At: res.At.UTC()})
		}
	}
	return d
}

func (s *Server) questionOf(r *jobs.Run, e *jobs.Escalation, now time.Time) Question {
	a := escalation.AnswersOf(e)
	q := Question{RunID: r.ID, EscalationID: e.ID, TaskID: e.TaskID, Trigger: string(e.Trigger),
		Why: e.Trigger.Describe(e.Name), Question: safetext.Redact(e.Question), Options: a.Options,
		Recommendation: safetext.Redact(e.Recommendation), Error: safetext.Redact(e.Error),
		Output: safetext.Redact(e.Output), Files: e.Files, Diffstat: safetext.Redact(e.Diff), AskedAt: e.CreatedAt.UTC(),
		WaitingS: now.Sub(e.CreatedAt).Round(time.Second).Seconds(), RunStatus: string(r.Status), URL: s.pageOf(r.ID)}
	if q.Options == nil {
		q.Options = []jobs.Option{}
	}
	if t := r.Task(e.TaskID); t != nil {
		q.Task = safetext.Redact(t.Title)
	}
	for _, t := range []jobs.ResolutionType{jobs.ResolveChoose, jobs.ResolveAnswer, jobs.ResolveRetry,
		jobs.ResolveResume, jobs.ResolveForce, jobs.ResolveAbort} {
		if a.Offers(t) {
			q.Answers = append(q.Answers, string(t))
		}
	}
	return q
}

// pageOf is a run's page in the web view, when ORCH_PUBLIC_URL says where that is.
func (s *Server) pageOf(runID string) string {
	if s.cfg.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(s.cfg.PublicURL, "/") + "/runs/" + url.PathEscape(runID)
}
