package jobs

import "fmt"

// Change is what an update of a run writes beside the run itself, in the same transaction: the events of its log
// and the entries of its audit trail. It also notes the first move of the update that the tables of transitions.go do
// not allow (Err): the store then saves nothing of it.
type Change struct {
	Events []Event
	Audit  []AuditEntry
	// Ledger is the ledger of the run's team for the period, when the team has a budget: the store reads it in the
	// update's transaction, and writes it back with what the update changed of the run's account (an attempt's hold,
	// its cost) and what the update did to it itself (a person's extension).
	Ledger *Ledger
	// Before is the run's account as the update found it, when Ledger is set: what its own attempts held.
	Before  Account
	run     *Run
	illegal *IllegalMove
}

// NewChange starts the change of an update of r: events emitted into it are numbered after r's last one.
func NewChange(r *Run) *Change { return &Change{run: r} }

// Emit adds an event to the change and returns the id it will have in the run's log.
func (c *Change) Emit(e Event) string {
	if c.run != nil {
		c.run.EventSeq++
		e.ID = fmt.Sprintf("%d-%d", c.run.CreatedAt.UnixMilli(), c.run.EventSeq)
		if e.RunID == "" {
			e.RunID = c.run.ID
		}
	}
	c.Events = append(c.Events, e)
	return e.ID
}

// Err is the first move of the change that the tables do not allow, as an *IllegalMove; nil when there was none.
func (c *Change) Err() error {
	if c.illegal == nil {
		return nil
	}
	return c.illegal
}

// allowRun reports whether r may move to status to, and notes the move on the change when it may not.
func (c *Change) allowRun(r *Run, to RunStatus) bool {
	if r.Status.CanMove(to) {
		return true
	}
	c.refuse(&IllegalMove{RunID: r.ID, From: string(r.Status), To: string(to)})
	return false
}

// allowTask reports whether task t of run runID may move to status to, and notes the move on the change when it may
// not.
func (c *Change) allowTask(runID string, t *Task, to TaskStatus) bool {
	if t.Status.CanMove(to) {
		return true
	}
	c.refuse(&IllegalMove{RunID: runID, TaskID: t.ID, From: string(t.Status), To: string(to)})
	return false
}

func (c *Change) refuse(m *IllegalMove) {
	if c.illegal == nil {
		c.illegal = m
	}
}

// runID is the id of the run the change is of ("" for a change made without one).
func (c *Change) runID() string {
	if c.run == nil {
		return ""
	}
	return c.run.ID
}
