package jobs

import "fmt"

// Change is what an update of a run writes beside the run itself, in the same transaction: the events of its log
// and the entries of its audit trail.
type Change struct {
	Events []Event
	Audit  []AuditEntry
	run    *Run
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
