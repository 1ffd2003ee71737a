// Package faults holds orch's multi-host fault suite (its tests only): a Redis primary and replica watched by three
// sentinels, three workers and a command-line host, each a container of an image built here FROM scratch (the static
// orch, Debian's redis-server, redis-cli and git with the libraries they load, busybox for a shell), on a private
// Docker network the suite makes and removes; the repository the runs clone and push to is a bare repository on a
// directory every container mounts. The suite kills, cuts off and restarts workers, fails Redis over and back, and
// kills the primary and its replica at once and starts them again from their append-only files, answers a question
// while every worker is down, and after each it checks what a team would: no run lost or stuck, no task's agent
// completed twice (the agents count their completions in a file outside the repository), one commit per task, and the
// remote's branch at the commit the run recorded.
package faults
