package pebblestore

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/store"
)

// writeOp is one write operation for the writer goroutine.
type writeOp struct {
	ctx context.Context //nolint:containedctx // the caller's ctx travels with its operation to the writer goroutine, which checks it before running fn
	// handoff decides between the writer taking the write and the caller
	// abandoning it (see store.Handoff).
	handoff store.Handoff
	fn      func(tx *writeTx) error
	done    chan error // buffered: the syncer never blocks on it
}

// pendingBatch is an applied batch waiting for its fsync.
type pendingBatch struct {
	b       *pebble.Batch
	wait    bool // the batch was applied with ApplyNoSyncWait
	ops     []*writeOp
	results []error
}

// write runs fn on the writer goroutine against the batch of the next
// commit and returns its error, or the commit's, once the commit is
// durable. fn must check everything it needs before its first write: an
// fn that returns an error must have written nothing. fn must not keep tx
// and must not touch the caller's values.
func (e *engine) write(ctx context.Context, fn func(tx *writeTx) error) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case e.ops <- op:
	case <-e.stop:
		return e.checkOpen()
	case <-ctx.Done():
		return ctx.Err()
	}
	return op.handoff.Await(ctx, op.done)
}

// runWriter is the writer goroutine: it takes one operation and every one
// already waiting (up to MaxBatch), runs them against one indexed batch,
// applies it and hands it to the syncer. While the syncer waits for one
// batch's fsync, the writer gathers and applies the next: Pebble's commit
// pipeline syncs them together.
func (e *engine) runWriter() {
	defer close(e.writerDone)
	defer close(e.syncs)
	batch := make([]*writeOp, 0, MaxBatch)
	for {
		select {
		case <-e.stop:
			return
		case op := <-e.ops:
			batch = append(batch[:0], op)
		}
	drain:
		for len(batch) < MaxBatch {
			select {
			case op := <-e.ops:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		e.commit(batch)
	}
}

// commit runs the operations against one batch and applies it.
func (e *engine) commit(ops []*writeOp) {
	pb := &pendingBatch{
		b:       e.db.NewIndexedBatch(),
		ops:     append([]*writeOp(nil), ops...),
		results: make([]error, len(ops)),
	}
	tx := &writeTx{b: pb.b, lookups: &e.lookups}
	for i, op := range ops {
		if err := op.handoff.Take(op.ctx); err != nil {
			pb.results[i] = err
			continue
		}
		pb.results[i] = op.fn(tx)
	}
	e.batches.Add(1)
	e.batchedOps.Add(int64(len(ops)))
	e.batchedKeys.Add(int64(pb.b.Count()))
	var err error
	switch {
	case pb.b.Empty():
	case e.sync.Sync:
		err = e.db.ApplyNoSyncWait(pb.b, e.sync)
		pb.wait = err == nil
	default:
		err = e.db.Apply(pb.b, e.sync)
	}
	if err != nil {
		e.logger.Error("apply write batch", "ops", len(ops), "error", err)
		failAll(pb, fmt.Errorf("commit write batch: %w", err))
	}
	e.syncs <- pb
}

// runSyncer waits for each applied batch's fsync, in order, and answers
// its callers.
func (e *engine) runSyncer() {
	defer close(e.syncerDone)
	for pb := range e.syncs {
		if pb.wait {
			if err := pb.b.SyncWait(); err != nil {
				e.logger.Error("sync write batch", "ops", len(pb.ops), "error", err)
				failAll(pb, fmt.Errorf("sync write batch: %w", err))
			}
		}
		_ = pb.b.Close()
		for i, op := range pb.ops {
			op.done <- pb.results[i]
		}
	}
}

// failAll sets err as the result of every operation that succeeded.
func failAll(pb *pendingBatch, err error) {
	for i := range pb.results {
		if pb.results[i] == nil {
			pb.results[i] = err
		}
	}
}

// writeTx is the batch of one commit as operations see it: reads see the
// database and every write of the batch before them.
type writeTx struct {
	b *pebble.Batch
	// lookups counts get and has (the engine's counter).
	lookups *atomic.Int64
}

// get returns a copy of the value of k, nil when it is missing.
func (t *writeTx) get(k []byte) ([]byte, error) {
	t.lookups.Add(1)
	return get(t.b, k)
}

// has reports whether k is stored.
func (t *writeTx) has(k []byte) (bool, error) {
	t.lookups.Add(1)
	_, closer, err := t.b.Get(k)
	if err != nil {
		if err == pebble.ErrNotFound { //nolint:errorlint // Pebble returns the sentinel itself
			return false, nil
		}
		return false, fmt.Errorf("get: %w", err)
	}
	if err := closer.Close(); err != nil {
		return false, fmt.Errorf("get: %w", err)
	}
	return true, nil
}

// jobRecord reads one job's record; nil when it is missing.
func (t *writeTx) jobRecord(id string) (*jobRecord, error) {
	v, err := t.get(key(pfxJob, id))
	if err != nil || v == nil {
		return nil, err
	}
	return parseJobRecord(id, v)
}

// set writes k.
func (t *writeTx) set(k, v []byte) error {
	if err := t.b.Set(k, v, nil); err != nil {
		return fmt.Errorf("set: %w", err)
	}
	return nil
}

// del deletes k.
func (t *writeTx) del(k []byte) error {
	if err := t.b.Delete(k, nil); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}
