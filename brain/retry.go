package brain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orchrun/orch/internal/backoff"
)

// retry.go is how both LLM backends ride out a busy or flaky service: a few tries with exponential backoff
// and full jitter, the server's retry-after honoured, and no retry where one cannot help (a refused key, a
// request the API rejects). The SDK's and the CLI's own retries are not relied on, so that the policy and
// its "gave up" message are orch's.

const (
	// maxTries is the seed's "retry with exponential backoff (3 attempts)"; after that the run is saved and
	// resumed later rather than held waiting for a service that is down.
	maxTries    = 3
	backoffBase = 2 * time.Second
	backoffCap  = 30 * time.Second
	// retryAfterCap bounds a server's retry-after: a rate limit that resets in an hour is a reason to park the
	// run, not to hold a worker slot.
	retryAfterCap = 60 * time.Second
)

// tryError is one failed call to a backend, classified where the backend knows what its failure means.
type tryError struct {
	msg       string        // complete and named: "anthropic messages: 529 overloaded_error: Overloaded"
	retryable bool          // another try may succeed
	after     time.Duration // the server's retry-after; 0 when it gave none
	kind      error         // when not retryable: ErrUnavailable or ErrInvalidReply
	tooLong   bool          // the prompt did not fit the model's context: a shorter one may
	cause     error
}

func (e *tryError) Error() string { return e.msg }
func (e *tryError) Unwrap() error { return e.cause }

// brainError is an LLM brain's final failure: its message is the backend's own account, and errors.Is
// matches its kind (ErrUnavailable or ErrInvalidReply).
type brainError struct {
	kind  error
	msg   string
	cause error
}

func (e *brainError) Error() string        { return e.msg }
func (e *brainError) Is(target error) bool { return target == e.kind }
func (e *brainError) Unwrap() error        { return e.cause }

func invalid(msg string, cause error) error {
	return &brainError{kind: ErrInvalidReply, msg: msg, cause: cause}
}

func unavailable(msg string, cause error) error {
	return &brainError{kind: ErrUnavailable, msg: msg, cause: cause}
}

// isPromptTooLong reports a failure that a shorter prompt may avoid.
func isPromptTooLong(err error) bool {
	var t *tryError
	return errors.As(err, &t) && t.tooLong
}

// withRetry calls try up to maxTries times; name ("anthropic messages") heads the errors it makes itself. A try that fails with a retryable *tryError is repeated after a
// backoff; any other failure ends at once. Cancellation of ctx ends it promptly, with ctx's error (not
// ErrUnavailable: nobody is to blame). When every try failed the error wraps ErrUnavailable and says why.
func withRetry[T any](ctx context.Context, name string, sleep func(context.Context, time.Duration) error,
	try func(context.Context) (T, error)) (T, error) {
	var zero T
	var last *tryError
	for n := 1; n <= maxTries; n++ {
		if n > 1 {
			if err := sleep(ctx, retryWait(n-1, last.after)); err != nil {
				return zero, fmt.Errorf("%s; then waiting to try again: %w", last.msg, err)
			}
		}
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("%s: %w", name, err)
		}
		v, err := try(ctx)
		if err == nil {
			return v, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return zero, fmt.Errorf("%s: %w", name, cerr)
		}
		var te *tryError
		if !errors.As(err, &te) {
			return zero, err
		}
		if !te.retryable {
			kind := te.kind
			if kind == nil {
				kind = ErrUnavailable
			}
			return zero, &brainError{kind: kind, msg: te.msg, cause: te}
		}
		last = te
	}
	return zero, unavailable(fmt.Sprintf("%s; gave up after %d tries", last.msg, maxTries), last)
}

// retryWait is the wait before retry n (1-based): the server's retry-after when it sent one (capped), else
// full jitter over an exponentially growing window, so that many workers hit by the same overload do not
// come back in step.
func retryWait(n int, after time.Duration) time.Duration {
	if after > 0 {
		return min(after, retryAfterCap)
	}
	return backoff.Policy{Initial: backoffBase, Factor: 2, Max: backoffCap, Jitter: backoff.Full}.Delay(n)
}
