// Command asynqmin is the smallest useful asynq program: a client that queues one task and a server that runs it. The
// bench builds it from an empty build cache beside orch (`go run ./bench -only build`), as the anchor for what orch's
// own cold build costs beyond asynq's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hibiken/asynq"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	flag.Parse()
	opt := asynq.RedisClientOpt{Addr: *addr}
	client := asynq.NewClient(opt)
	defer client.Close()
	if _, err := client.Enqueue(asynq.NewTask("hello", nil)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	done := make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 1})
	go func() {
		_ = srv.Run(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
			close(done)
			return nil
		}))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "the task did not run")
		os.Exit(1)
	}
	srv.Shutdown()
}
