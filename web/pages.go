package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/pipeline"
)

// pageSize is how many runs a page of the list shows.
const pageSize = 50

var funcs = template.FuncMap{
	"redact": safetext.Redact,
	"ago":    ago,
	"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"dur":    func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() },
	"usd":    func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"pct":    func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"trunc":  truncate,
	"add":    func(a, b int) int { return a + b },
	"count":  jobs.Count,
	"agent":  jobs.AgentName,
	"diffstat": func(g *jobs.Git) string {
		return jobs.Work{FilesChanged: g.FilesChanged, Insertions: g.Insertions, Deletions: g.Deletions}.Diffstat()
	},
}

// ago says how long ago t was, as people read it at a glance.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return since(time.Since(t))
}

func since(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// render writes a page: the layout around the named page's content.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var b strings.Builder
	if err := s.pages[page].Execute(&b, data); err != nil {
		s.cfg.Log.Error("web: rendering", "page", page, "err", err)
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if t0, ok := r.Context().Value(startKey{}).(time.Time); ok {
		// What the page cost the server, reading the store and rendering: browsers show it, the benchmark reads it.
		w.Header().Set("Server-Timing", fmt.Sprintf("app;dur=%.2f", float64(time.Since(t0).Microseconds())/1000))
	}
	w.WriteHeader(status)
	fmt.Fprint(w, b.String())
}

// message renders a page that only says something (a run that is not there, a store that does not answer).
func (s *Server) message(w http.ResponseWriter, r *http.Request, p person, status int, title, text string) {
	s.render(w, r, status, "message", map[string]any{"Person": p, "Title": title, "Text": text})
}

// runRow is one run in the list: how long it has taken, what it cost, how far it got and where its work is.
type runRow struct {
	Run      *jobs.Run
	Question *jobs.Escalation
	Duration string
	CostUSD  float64
	Tally    jobs.Tally
	Branch   string
}

func rowOf(run *jobs.Run, now time.Time) runRow {
	usd, _, _ := run.Cost()
	row := runRow{Run: run, Question: run.OpenEscalation(), Duration: since(run.Duration(now)), CostUSD: usd, Tally: run.Tally()}
	if run.Git != nil {
		row.Branch = run.Git.Branch
	}
	return row
}

// handleRuns lists runs, newest first, filtered by status, plan and who started them.
func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request, p person) {
	q := r.URL.Query()
	filter := runFilter{Status: q.Get("status"), Plan: strings.TrimSpace(q.Get("plan")), User: strings.TrimSpace(q.Get("user"))}
	pageNo, _ := strconv.Atoi(q.Get("page"))
	pageNo = max(pageNo, 0)
	runs, more, err := s.find(r.Context(), filter, pageNo*pageSize, pageSize)
	if err != nil {
		s.cfg.Log.Error("web: listing runs", "err", err)
		s.message(w, r, p, http.StatusServiceUnavailable, "The store does not answer", err.Error())
		return
	}
	now := s.cfg.Now()
	rows := make([]runRow, len(runs))
	for i, run := range runs {
		rows[i] = rowOf(run, now)
	}
	link := func(page int) string {
		v := url.Values{}
		for k, x := range map[string]string{"status": filter.Status, "plan": filter.Plan, "user": filter.User} {
			if x != "" {
				v.Set(k, x)
			}
		}
		if page > 0 {
			v.Set("page", strconv.Itoa(page))
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	data := map[string]any{"Person": p, "Rows": rows, "Filter": filter, "Statuses": statuses, "Page": pageNo,
		"CanStart": s.cfg.Front != nil && s.mayAnswer(p)}
	if pageNo > 0 {
		data["Newer"] = link(pageNo - 1)
	}
	if more {
		data["Older"] = link(pageNo + 1)
	}
	s.render(w, r, http.StatusOK, "runs", data)
}

// statuses are the run statuses the list filters by; "open" is a run waiting for an answer.
var statuses = []string{string(jobs.RunRunning), store.StatusOpen, string(jobs.RunParked), string(jobs.RunCompleted), string(jobs.RunFailed), string(jobs.RunAborted)}

// runFilter is what the list is narrowed to.
type runFilter struct {
	Status string // a run status, or "open": waiting for an answer
	Plan   string // part of the plan's path or title
	User   string // who started it
}

// find returns a page of the runs the filter keeps, newest first, and whether more follow.
func (s *Server) find(ctx context.Context, f runFilter, offset, limit int) ([]*jobs.Run, bool, error) {
	return s.cfg.Store.Find(ctx, store.Query{Status: f.Status, Plan: f.Plan, User: f.User}, offset, limit)
}

// handleRun shows one run: its tasks or pipeline, its open question with the form that answers it, its attempts,
// events, costs, branch and audit trail.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request, p person) {
	ctx := r.Context()
	run, err := s.cfg.Store.Get(ctx, r.PathValue("id"))
	if errors.Is(err, jobs.ErrRunNotFound) {
		s.message(w, r, p, http.StatusNotFound, "No such run", fmt.Sprintf("There is no run %q here.", truncate(r.PathValue("id"), 80)))
		return
	}
	if err != nil {
		s.message(w, r, p, http.StatusServiceUnavailable, "The store does not answer", err.Error())
		return
	}
	events, err := s.cfg.Store.Recent(ctx, run.ID, timelineWindow)
	if err != nil {
		s.cfg.Log.Warn("web: reading events", "run", run.ID, "err", err)
	}
	audit, err := s.cfg.Store.Audit(ctx, run.ID)
	if err != nil {
		s.cfg.Log.Warn("web: reading the audit trail", "run", run.ID, "err", err)
	}
	all := r.URL.Query().Get("all") == "1"
	now := s.cfg.Now()
	lines := eventViews(events)
	data := map[string]any{
		"Person":   p,
		"Run":      run,
		"Question": questionView(run, run.OpenEscalation(), p, s.mayAnswer(p), now),
		"Answered": answeredViews(run),
		"Timeline": timelineOf(run, lines, all),
		"Live":     liveOf(run, lines, now),
		"Audit":    audit,
		"Cost":     costOf(run),
		"Budget":   run.BudgetText(now),
		"Notice":   s.notice(run, r.URL.Query()),
		"LastID":   lastID(events),
		"Graph":    graphOf(run),
		"Chart":    chartOf(run, now),
		"Actions":  s.actionsOf(run, p),
		"Duration": since(run.Duration(now)),
		"CostUSD":  usdOf(run),
	}
	s.render(w, r, http.StatusOK, "run", data)
}

// graphOf draws a pipeline run's graph with where the run is: the nodes done, the one being run (or waiting for a
// person), and those whose last outcome failed. A milestone run, or a graph that no longer parses, has no picture.
func graphOf(run *jobs.Run) template.HTML {
	if run.Graph == "" || run.Pipeline == nil {
		return ""
	}
	g, err := pipeline.ParseDOT(run.PlanPath, run.Graph)
	if err != nil {
		return ""
	}
	states := map[string]pipeline.NodeState{}
	for _, id := range run.Pipeline.Completed {
		states[id] = pipeline.NodeDone
	}
	for id, outcome := range run.Pipeline.Outcomes {
		if outcome == string(pipeline.StatusFail) {
			states[id] = pipeline.NodeFailed
		}
	}
	if cur := run.Pipeline.Current; cur != "" && !run.Status.Terminal() {
		states[cur] = pipeline.NodeCurrent
		if run.OpenEscalation() != nil {
			states[cur] = pipeline.NodeWaiting
		}
	}
	// pipeline.SVG escapes every text it draws and emits no script or style: it is safe to inline.
	return template.HTML(pipeline.SVG(g, states))
}

// question is an open escalation as the forms show it: the answers it really has (escalation.AnswersOf), exactly
// as the terminal and Slack offer them, and where the forms are posted from.
type question struct {
	E           *jobs.Escalation
	RunID       string
	Task        string
	Recommended string // the recommended option's key, or text
	Answers     escalation.Answers
	MayAnswer   bool
	CSRF        string
	// Back is where an answer returns to: "" for the run's page, "questions" for the questions page.
	Back         string
	Waiting      string
	Guidance     string // what a free-text answer does here
	ConfirmAbort string
}

func questionView(run *jobs.Run, e *jobs.Escalation, p person, may bool, now time.Time) *question {
	if e == nil {
		return nil
	}
	q := &question{E: e, RunID: run.ID, Task: taskTitle(run, e.TaskID), Recommended: e.Recommendation,
		Answers: escalation.AnswersOf(e), MayAnswer: may, CSRF: p.CSRF, Waiting: since(now.Sub(e.CreatedAt)),
		Guidance:     "Guidance for the agent's next attempt",
		ConfirmAbort: fmt.Sprintf("Abort run %s? Its work so far is kept, but nothing more runs.", run.ID)}
	switch {
	case e.Trigger == jobs.TriggerApproval:
		q.Guidance = "Deny the call with your reason (the agent reads it)"
	case e.Trigger == jobs.TriggerGate:
		q.Guidance = "Answer with a choice's key or label"
	case e.Trigger == jobs.TriggerChat:
		q.Guidance = "Your reply to the agent (/done or /approve ends the conversation, /reject fails the task)"
	case e.Call:
		q.Guidance = "An answer of your own"
	}
	return q
}

func taskTitle(run *jobs.Run, id string) string {
	for _, t := range run.Tasks {
		if t.ID == id {
			return t.ID + " " + t.Title
		}
	}
	return id
}

// answeredView is a question that was answered: who, how, after how long.
type answeredView struct {
	E      *jobs.Escalation
	Answer string
	After  string
}

func answeredViews(run *jobs.Run) []answeredView {
	var out []answeredView
	for _, e := range run.Escalations {
		if e.Resolution == nil {
			continue
		}
		out = append(out, answeredView{E: e, Answer: resolutionText(e), After: since(e.Resolution.At.Sub(e.CreatedAt))})
	}
	return out
}

// resolutionText says what an answer was, in the words every surface uses (escalation.Describe).
func resolutionText(e *jobs.Escalation) string {
	return truncate(escalation.Describe(e, e.Resolution), 300)
}

// notice is what the page says after a form: the answer was taken, or someone else's was first.
func (s *Server) notice(run *jobs.Run, q url.Values) string {
	switch {
	case q.Get("started") != "" && q.Get("again") != "":
		return fmt.Sprintf("Run %s started again, as %s was asked for.", run.ID, truncate(q.Get("again"), 40))
	case q.Get("started") != "":
		return fmt.Sprintf("Run %s started.", run.ID)
	case q.Get("cancelled") != "" && run.Status == jobs.RunAborted:
		return fmt.Sprintf("Run %s was cancelled: %s.", run.ID, run.Reason)
	}
	id := q.Get("answered")
	lost := q.Get("lost")
	if id == "" && lost == "" {
		return ""
	}
	for _, e := range run.Escalations {
		if e.Resolution == nil || (e.ID != id && e.ID != lost) {
			continue
		}
		who := fmt.Sprintf("%s (%s)", e.Resolution.By, e.Resolution.Via)
		if e.ID == lost {
			return fmt.Sprintf("Someone answered first: %s %s %s ago. Your answer was not used.", who, resolutionText(e), since(time.Since(e.Resolution.At)))
		}
		return fmt.Sprintf("Your answer was taken: %s.", resolutionText(e))
	}
	if lost != "" {
		return "That question is no longer open; your answer was not used."
	}
	return ""
}

// handleAnswer resolves the run's open question from the form, through the same atomic resolution as the terminal
// and Slack: the first answer wins, and a later one is told who answered.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request, p person) {
	runID := r.PathValue("id")
	if !s.mayAnswer(p) {
		s.message(w, r, p, http.StatusForbidden, "Not allowed", "You are not allowed to answer here (ORCH_ALLOWED_USERS).")
		return
	}
	req := escalation.Request{RunID: runID, EscalationID: r.PostFormValue("escalation"), By: p.Name, Via: originKind}
	switch action := r.PostFormValue("action"); action {
	case "choose":
		req.Type, req.Key = jobs.ResolveChoose, r.PostFormValue("key")
	case "answer":
		req.Type, req.Text = jobs.ResolveAnswer, r.PostFormValue("text")
	case "retry":
		req.Type = jobs.ResolveRetry
	case "resume":
		req.Type = jobs.ResolveResume
	case "abort":
		if r.PostFormValue("confirm") != "yes" {
			s.message(w, r, p, http.StatusBadRequest, "Not aborted", "Tick the box that confirms the abort.")
			return
		}
		req.Type, req.Reason = jobs.ResolveAbort, r.PostFormValue("reason")
		if strings.TrimSpace(req.Reason) == "" {
			req.Reason = "aborted from the web by " + p.Name
		}
	case "force":
		if r.PostFormValue("acknowledge") != "yes" {
			s.message(w, r, p, http.StatusBadRequest, "Not forced", "Tick the box that acknowledges the risk: the task is marked done despite its error.")
			return
		}
		req.Type, req.Reason, req.AcknowledgeRisk = jobs.ResolveForce, r.PostFormValue("reason"), true
	default:
		s.message(w, r, p, http.StatusBadRequest, "Unknown answer", fmt.Sprintf("The form sent %q, which is no answer.", truncate(action, 40)))
		return
	}
	if msg := s.notOffered(r, req); msg != "" {
		s.message(w, r, p, http.StatusBadRequest, "That answer does not fit the question", msg)
		return
	}
	_, _, err := escalation.Resolve(r.Context(), s.cfg.Store, s.cfg.Queue, req)
	// The answer's page: the run's, or the questions page it was given from, which then says what became of it.
	target, anchor := "/runs/"+url.PathEscape(runID)+"?", "#question"
	if r.PostFormValue("back") == "questions" {
		target, anchor = "/questions?run="+url.QueryEscape(runID)+"&", ""
	}
	switch {
	case err == nil:
		http.Redirect(w, r, target+"answered="+url.QueryEscape(req.EscalationID)+anchor, http.StatusSeeOther)
	case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
		http.Redirect(w, r, target+"lost="+url.QueryEscape(req.EscalationID)+anchor, http.StatusSeeOther)
	case errors.Is(err, escalation.ErrInvalid):
		s.message(w, r, p, http.StatusBadRequest, "That answer does not fit the question", err.Error())
	case errors.Is(err, jobs.ErrRunNotFound):
		s.message(w, r, p, http.StatusNotFound, "No such run", err.Error())
	default:
		s.cfg.Log.Error("web: resolving", "run", runID, "err", err)
		s.message(w, r, p, http.StatusServiceUnavailable, "The answer was not saved", err.Error())
	}
}

// notOffered says why an answer is not one the question has (escalation.AnswersOf): a form of another page, or
// made by hand, must not retry an agent's question or force an approval. "" when it is, or when the question is no
// longer open — the resolution then tells who answered first.
func (s *Server) notOffered(r *http.Request, req escalation.Request) string {
	run, err := s.cfg.Store.Get(r.Context(), req.RunID)
	if err != nil {
		return ""
	}
	e := run.Escalation(req.EscalationID)
	if e == nil || e.Resolution != nil || escalation.AnswersOf(e).Offers(req.Type) {
		return ""
	}
	return fmt.Sprintf("Question %s (%s) cannot be answered with %s.", e.ID, e.Trigger, req.Type)
}

// openQuestion is one question waiting for an answer, across all runs, with the forms that answer it.
type openQuestion struct {
	Run     *jobs.Run
	E       *jobs.Escalation
	Task    string
	Waiting time.Duration
	Q       *question // nil past maxQuestionForms: the run's page answers it
}

// questionsPage is how many waiting runs one questions page lists, the oldest first; the next page has the next ones.
const questionsPage = 50

// maxQuestionForms is how many questions the page answers in place, the oldest first; the others link to their run.
const maxQuestionForms = 100

// handleQuestions lists the open questions of every run, oldest first, with how long each has waited and the forms
// that answer it.
func (s *Server) handleQuestions(w http.ResponseWriter, r *http.Request, p person) {
	// The waiting runs are indexed: only the page's runs are read, however many wait.
	n, _ := strconv.Atoi(r.URL.Query().Get("page"))
	n = max(n, 1)
	runs, more, err := s.cfg.Store.Questions(r.Context(), (n-1)*questionsPage, questionsPage)
	if err != nil {
		s.message(w, r, p, http.StatusServiceUnavailable, "The store does not answer", err.Error())
		return
	}
	now := s.cfg.Now()
	var qs []openQuestion
	for _, run := range runs {
		if e := run.OpenEscalation(); e != nil && !run.Status.Terminal() {
			qs = append(qs, openQuestion{Run: run, E: e, Task: taskTitle(run, e.TaskID), Waiting: now.Sub(e.CreatedAt)})
		}
	}
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].E.CreatedAt.Before(qs[j].E.CreatedAt) })
	may := s.mayAnswer(p)
	for i := range qs[:min(len(qs), maxQuestionForms)] {
		qs[i].Q = questionView(qs[i].Run, qs[i].E, p, may, now)
		qs[i].Q.Back = "questions"
	}
	var next, prev int
	if more {
		next = n + 1
	}
	if n > 1 {
		prev = n - 1
	}
	s.render(w, r, http.StatusOK, "questions", map[string]any{"Person": p, "Questions": qs, "since": since,
		"Notice": s.questionsNotice(r), "MoreThanForms": len(qs) > maxQuestionForms, "Next": next, "Prev": prev})
}

// questionsNotice is what the questions page says after an answer given there: the run's page would say the same.
func (s *Server) questionsNotice(r *http.Request) string {
	q := r.URL.Query()
	id := q.Get("run")
	if id == "" {
		return ""
	}
	run, err := s.cfg.Store.Get(r.Context(), id)
	if err != nil {
		return ""
	}
	if text := s.notice(run, q); text != "" {
		return "Run " + run.ID + ": " + text
	}
	return ""
}

// cost is what a run cost so far: the agent's calls and the brain's.
type cost struct {
	AgentUSD, BrainUSD float64
	Tokens             int64
	Attempts           int
}

func costOf(run *jobs.Run) cost {
	var c cost
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			c.Attempts++
			c.AgentUSD += a.CostUSD
			c.BrainUSD += a.Brain.CostUSD
			c.Tokens += a.InputTokens + a.OutputTokens
		}
	}
	return c
}

func usdOf(run *jobs.Run) float64 {
	usd, _, _ := run.Cost()
	return usd
}
