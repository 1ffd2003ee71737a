package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// A connection can go away under a write: the server died, a failover moved the primary, the embedded store was
// handed over to another orch process as the one serving it ended. The write may or may not have been applied. The
// store writes a run's document with everything that goes with it in one MULTI, so it was applied whole or not at all,
// and a read of the document on a new connection tells which: the document is the very bytes sent only if the write
// was applied (it carries the run's new version and the time of the write). So a write whose connection was lost is
// neither reported as failed when it was applied nor applied twice when it was not. (Should another process change
// the run between the lost write and the read, the read cannot tell, and the write is tried again on the newer run,
// as after a conflict: that takes a second failure inside the first's reconnection.)

// lostRetries is how many lost connections a write outlives.
const lostRetries = 3

// errNotLanded says a write whose connection was lost was not applied: it may be tried again.
var errNotLanded = errors.New("the write was not applied")

// lostConnection reports an error of a connection that went away under a command, after which a new connection may
// succeed.
func lostConnection(err error) bool {
	var op *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || errors.As(err, &op)
}

// landed tells whether the write of data to key, whose connection was lost, was applied: nil when it was,
// errNotLanded when it was not, another error when the store cannot say.
func (s *Store) landed(ctx context.Context, key string, data []byte) error {
	got, err := s.rdb.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return errNotLanded
	case err != nil:
		return fmt.Errorf("the connection was lost as a change to %s was written, and whether it was cannot be read: %w", key, err)
	case bytes.Equal(got, data):
		return nil
	}
	return errNotLanded
}
