package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/orchrun/orch/escalation"
	"github.com/orchrun/orch/jobs"
)

// handleCancel cancels a run that is queued, running or parked, once the person has confirmed it, through the same
// audited abort as the terminal's `orch abort`: the audit trail names the person and the web.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request, p person) {
	if !s.mayAnswer(p) {
		s.message(w, r, p, http.StatusForbidden, "Not allowed", "You are not allowed to cancel runs here (ORCH_ALLOWED_USERS).")
		return
	}
	runID := r.PathValue("id")
	if r.PostFormValue("confirm") != "yes" {
		s.message(w, r, p, http.StatusBadRequest, "Not cancelled", "Tick the box that confirms the cancel.")
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "cancelled from the web by " + p.Name
	}
	_, err := escalation.Abort(r.Context(), s.cfg.Store, s.cfg.Queue, runID, p.Name, originKind, truncate(reason, 500))
	switch {
	case err == nil:
		http.Redirect(w, r, "/runs/"+url.PathEscape(runID)+"?cancelled=1", http.StatusSeeOther)
	case errors.Is(err, jobs.ErrRunNotFound):
		s.message(w, r, p, http.StatusNotFound, "No such run", "There is no run "+truncate(runID, 80)+" here.")
	case errors.Is(err, escalation.ErrNoOpenEscalation):
		s.message(w, r, p, http.StatusConflict, "Not cancelled", s.endedText(r, runID))
	case errors.Is(err, escalation.ErrAlreadyResolved):
		// Someone answered the run's question as the cancel came: what the run does now is on its page.
		s.message(w, r, p, http.StatusConflict, "Not cancelled",
			"Run "+runID+"'s question was being answered as you cancelled. Look at the run again, and cancel it from there if you still want to.")
	default:
		s.cfg.Log.Error("web: cancelling", "run", runID, "err", err)
		s.message(w, r, p, http.StatusServiceUnavailable, "Not cancelled", "The cancel was not saved: the store failed. Try again in a moment.")
	}
}

// endedText says that a run has ended, and how, for a cancel that came after its end.
func (s *Server) endedText(r *http.Request, runID string) string {
	run, err := s.cfg.Store.Get(r.Context(), runID)
	if err != nil {
		return "Run " + runID + " has already ended: there is nothing to cancel."
	}
	return "Run " + run.ID + " has already ended (" + string(run.Status) + "): there is nothing to cancel."
}
