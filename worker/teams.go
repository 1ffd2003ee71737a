package worker

import "github.com/orchrun/orch/jobs/queue"

// stepQueue is the queue that enqueues steps and reads their leases with this worker's teams (Config.Teams): each
// configured team's steps on a queue of its own, every other run's on the default one (jobs/queue/teams.go).
func (w *Worker) stepQueue() *queue.Queue {
	if len(w.cfg.Teams) == 0 {
		return w.cfg.Queue
	}
	return w.cfg.Queue.WithTeams(w.cfg.Teams)
}

// stepServerQueues are the queues the step server serves, with their weights: the configured ones, and every other
// step queue asynq knows of at weight 1, so that steps a differently configured worker (or this deployment before
// its teams changed) put on a team's queue are still run. known is queue.StepQueues'.
func stepServerQueues(q *queue.Queue, known []string) map[string]int {
	queues := q.StepWeights()
	for _, name := range known {
		if _, ok := queues[name]; !ok {
			queues[name] = 1
		}
	}
	return queues
}
