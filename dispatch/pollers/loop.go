// Package pollers holds the safety-net loops that close every gap between
// the store (the truth) and the queue (a fast path): pending jobs that are
// due, queued jobs the queue lost, claims whose worker died, events whose
// fan-out a crash interrupted, and retention. Each poller is a ticker around
// a small, idempotent runOnce that is safe to run on several instances at
// once: every move is a version-checked write, so two instances never move
// the same job twice.
package pollers

import (
	"context"
	"log/slog"
	"time"
)

// BatchSizeDefault is how many records one round of a poller handles at
// most; a poller that filled its batch runs again at once.
const BatchSizeDefault = 500

// loop runs runOnce every interval until ctx ends. A round that reports more
// work (full batch) is followed by another at once. Errors are logged here.
func loop(ctx context.Context, logger *slog.Logger, interval time.Duration, runOnce func(context.Context) (more bool, err error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for {
			more, err := runOnce(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				logger.WarnContext(ctx, "poller round failed", "error", err)
				break
			}
			if !more || ctx.Err() != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
