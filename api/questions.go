package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// QuestionList is GET /questions: the open questions, oldest first, a page at a time.
type QuestionList struct {
	Questions []Question `json:"questions"`
	// More is set when there are more open questions past this page, and NextPage is then the next page's number.
	More     bool `json:"more,omitempty"`
	Page     int  `json:"page"`
	NextPage int  `json:"next_page,omitempty"`
}

// questionsLimit is the default page of questions, maxQuestions the largest.
const (
	questionsLimit = 100
	maxQuestions   = 500
)

// questions lists a page of the open questions, oldest first. The waiting runs are indexed: only the page's runs are
// read, however many wait.
func (s *Server) questions(ctx context.Context, page, limit int) (QuestionList, error) {
	switch {
	case page < 1:
		return QuestionList{}, invalid("page is counted from 1")
	case limit < 1 || limit > maxQuestions:
		return QuestionList{}, invalid(fmt.Sprintf("limit is 1 to %d", maxQuestions))
	}
	found, more, err := s.cfg.Store.Questions(ctx, (page-1)*limit, limit)
	if err != nil {
		return QuestionList{}, err
	}
	out := QuestionList{Questions: []Question{}, More: more, Page: page}
	if more {
		out.NextPage = page + 1
	}
	now := s.cfg.Now()
	for _, r := range found {
		if e := r.OpenEscalation(); e != nil && !r.Status.Terminal() {
			out.Questions = append(out.Questions, s.questionOf(r, e, now))
		}
	}
	slices.SortStableFunc(out.Questions, func(a, b Question) int { return a.AskedAt.Compare(b.AskedAt) })
	return out, nil
}

func (s *Server) listQuestions(w http.ResponseWriter, r *http.Request, _ string) {
	v := r.URL.Query()
	page, limit := 1, questionsLimit
	if !numbers(w, v, map[string]*int{"page": &page, "limit": &limit}) {
		return
	}
	list, err := s.questions(r.Context(), page, limit)
	var bad *invalidError
	switch {
	case errors.As(err, &bad):
		problem(w, http.StatusBadRequest, "Bad query", bad.msg)
	case err != nil:
		s.unavailable(w, "listing questions", err)
	default:
		writeJSON(w, http.StatusOK, list)
	}
}

func (s *Server) question(w http.ResponseWriter, r *http.Request, _ string) {
	run, ok := s.run(w, r)
	if !ok {
		return
	}
	e := run.OpenEscalation()
	if e == nil || run.Status.Terminal() {
		problem(w, http.StatusNotFound, "No open question", fmt.Sprintf("run %s is %s and waits for no answer", run.ID, run.Status))
		return
	}
	writeJSON(w, http.StatusOK, s.questionOf(run, e, s.cfg.Now()))
}

// AnswerRequest is POST /runs/{id}/answer: exactly one of choose (an option's key), answer (words), retry, resume,
// force (a reason, with acknowledge_risk) or abort (a reason). EscalationID, when set, must name the open question:
// an answer meant for a question that was answered meanwhile is refused instead of answering the next one.
type AnswerRequest struct {
	EscalationID    string `json:"escalation_id,omitempty"`
	Choose          string `json:"choose,omitempty"`
	Answer          string `json:"answer,omitempty"`
	Retry           bool   `json:"retry,omitempty"`
	Resume          bool   `json:"resume,omitempty"`
	Force           string `json:"force,omitempty"`
	AcknowledgeRisk bool   `json:"acknowledge_risk,omitempty"`
	Abort           string `json:"abort,omitempty"`
}

// resolution is the escalation request an answer makes, or why it makes none.
func (a AnswerRequest) resolution(runID, who, via string) (escalation.Request, error) {
	req := escalation.Request{RunID: runID, EscalationID: a.EscalationID, By: who, Via: via}
	var kinds []string
	if a.Choose != "" {
		req.Type, req.Key, kinds = jobs.ResolveChoose, a.Choose, append(kinds, "choose")
	}
	if a.Answer != "" {
		req.Type, req.Text, kinds = jobs.ResolveAnswer, a.Answer, append(kinds, "answer")
	}
	if a.Retry {
		req.Type, kinds = jobs.ResolveRetry, append(kinds, "retry")
	}
	if a.Resume {
		req.Type, kinds = jobs.ResolveResume, append(kinds, "resume")
	}
	if a.Force != "" {
		if !a.AcknowledgeRisk {
			return req, invalid("force marks the task done despite its error: send acknowledge_risk: true with it")
		}
		req.Type, req.Reason, req.AcknowledgeRisk, kinds = jobs.ResolveForce, a.Force, true, append(kinds, "force")
	}
	if a.Abort != "" {
		req.Type, req.Reason, kinds = jobs.ResolveAbort, a.Abort, append(kinds, "abort")
	}
	switch len(kinds) {
	case 0:
		return req, invalid("send one answer: choose (an option's key), answer (words), retry, resume, force or abort (a reason)")
	case 1:
		return req, nil
	}
	return req, invalid("send one answer, not " + strings.Join(kinds, " and "))
}

// answerRun resolves a run's question for who: the one way the API and MCP answer.
func (s *Server) answerRun(ctx context.Context, who, via, runID string, a AnswerRequest) (*jobs.Run, *jobs.Escalation, error) {
	req, err := a.resolution(runID, who, via)
	if err != nil {
		return nil, nil, err
	}
	return escalation.Resolve(ctx, s.cfg.Store, s.cfg.Queue, req)
}

// Resolved is what an answer did.
type Resolved struct {
	RunID        string `json:"run_id"`
	EscalationID string `json:"escalation_id"`
	Answer       string `json:"answer"`
	RunStatus    string `json:"run_status"`
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, who string) {
	var a AnswerRequest
	if !readJSON(w, r, &a) {
		return
	}
	id := r.PathValue("id")
	run, e, err := s.answerRun(r.Context(), who, Via, id, a)
	var bad *invalidError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, Resolved{RunID: run.ID, EscalationID: e.ID, Answer: escalation.Describe(e, e.Resolution),
			RunStatus: string(run.Status)})
	case run != nil && e != nil:
		// Saved, but not queued: the run goes on at the next `orch resume` or worker start.
		s.cfg.Log.Warn("api: answer saved, resume not queued", "run", id, "err", err)
		writeJSON(w, http.StatusAccepted, Resolved{RunID: run.ID, EscalationID: e.ID, Answer: escalation.Describe(e, e.Resolution),
			RunStatus: string(run.Status)})
	case errors.As(err, &bad):
		problem(w, http.StatusBadRequest, "Not an answer", bad.msg)
	case errors.Is(err, jobs.ErrRunNotFound):
		problem(w, http.StatusNotFound, "No such run", fmt.Sprintf("there is no run %q", id))
	case errors.Is(err, escalation.ErrAlreadyResolved), errors.Is(err, escalation.ErrNoOpenEscalation):
		s.conflict(w, r.Context(), id, a.EscalationID, err)
	case errors.Is(err, escalation.ErrInvalid):
		problem(w, http.StatusUnprocessableEntity, "That answer does not fit the question", err.Error())
	default:
		s.unavailable(w, "answering run "+id, err)
	}
}

// conflict answers a question that is no longer open: 409, with who answered it first when someone did.
func (s *Server) conflict(w http.ResponseWriter, ctx context.Context, runID, escID string, err error) {
	p := Problem{Type: "about:blank", Title: "Already answered", Status: http.StatusConflict, Detail: err.Error()}
	if run, gerr := s.cfg.Store.Get(ctx, runID); gerr == nil {
		e := run.Escalation(escID)
		if e == nil && len(run.Escalations) > 0 {
			e = run.Escalations[len(run.Escalations)-1]
		}
		if e != nil && e.Resolution != nil {
			res := e.Resolution
			at := res.At.UTC()
			p.AnsweredBy, p.AnsweredVia, p.AnsweredAt, p.Answer = res.By, res.Via, &at, escalation.Describe(e, res)
		} else if run.Status.Terminal() {
			p.Title = "The run has ended"
		}
	}
	writeProblem(w, p)
}
