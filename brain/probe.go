package brain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A brain chosen because something is installed or set must be seen to answer before runs rely on it: a `claude` on
// PATH may not be Claude Code, or not be signed in; a key may be revoked or out of credit. Probe asks the backend the
// least it can and says why it cannot serve, in words fit for the run's first lines.

// probeTimeout bounds a probe: a backend that cannot answer a one-word question in this time would stall every
// judgement of the run.
const probeTimeout = 60 * time.Second

// probePrompt is the question a CLI brain is asked: any reply at all shows it is a model that answers.
const probePrompt = "Reply with the single word: ready"

// Probe asks the Claude Code CLI the least it can, as the brain asks it (no tools, no session): nil when it answers.
func (c *ClaudeCLI) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	r, err := c.once(ctx, probePrompt)
	switch {
	case err != nil:
		return probeError(err)
	case strings.TrimSpace(r.text) == "":
		return errors.New("it answered with nothing")
	}
	return nil
}

// Probe asks the Messages API for the list of models, which costs nothing: nil when the key is taken.
func (a *Anthropic) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := a.client.listModels(ctx); err != nil {
		var apiErr *apiError
		if errors.As(err, &apiErr) {
			return fmt.Errorf("the Messages API answered %d %s", apiErr.StatusCode, truncate(collapse(apiErr.Body), 200))
		}
		return probeError(err)
	}
	return nil
}

// probeError says why a backend did not answer, in one bounded line.
func probeError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", probeTimeout)
	}
	return errors.New(truncate(collapse(err.Error()), 300))
}
