package mongostore

import (
	"context"
	"sync"
	"time"
)

// groupInsertMaxDocs bounds the documents of one shared insert (a
// MongoDB insert takes up to 100,000 documents and 48 MB; status events
// are small, and a bounded batch keeps one caller from waiting on a huge
// one).
const groupInsertMaxDocs = 1000

// groupInsertTimeout bounds one shared insert: it runs on behalf of
// several callers, so no single caller's context may cancel it.
const groupInsertTimeout = 30 * time.Second

// groupInserter shares inserts between concurrent callers: a group
// commit. A caller that finds no insert running makes one with its
// documents and those of every caller that arrived meanwhile, then hands
// the documents that arrived during its insert to a new leader; a caller
// that finds one running waits for the next. Nobody waits for a timer: a
// lone caller inserts at once, and under load one insert command serves
// many deliveries' status events. Every caller learns the outcome of the
// insert that carried its documents.
type groupInserter struct {
	insert func(ctx context.Context, docs []any) error

	mu      sync.Mutex
	pending []*groupInsertReq
	running bool
}

// groupInsertReq is one caller's documents and where its outcome goes.
type groupInsertReq struct {
	docs []any
	done chan error
}

// Insert inserts docs, sharing the command with concurrent callers, and
// returns the outcome of the insert that carried them. A caller that waits
// for another's insert returns ctx's error when ctx ends first (its
// documents may still be inserted).
func (g *groupInserter) Insert(ctx context.Context, docs []any) error {
	if len(docs) == 0 {
		return nil
	}
	req := &groupInsertReq{docs: docs, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if lead {
		// Its documents are first in the insert it runs, which no
		// caller's cancellation stops: it returns that insert's outcome.
		g.lead(ctx)
		return <-req.done
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lead runs one shared insert of what is pending, then passes the lead on
// (to a goroutine) when more arrived meanwhile, so the leader's caller
// waits for one insert only.
func (g *groupInserter) lead(ctx context.Context) {
	g.mu.Lock()
	batch, n := g.take()
	g.mu.Unlock()
	docs := make([]any, 0, n)
	for _, r := range batch {
		docs = append(docs, r.docs...)
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupInsertTimeout)
	err := g.insert(ictx, docs)
	cancel()
	for _, r := range batch {
		r.done <- err
	}
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.running = false
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	go g.lead(context.WithoutCancel(ctx))
}

// take removes from pending the requests of the next insert: at least
// one, then as many as fit groupInsertMaxDocs. It returns them and their
// number of documents. g.mu is held.
func (g *groupInserter) take() ([]*groupInsertReq, int) {
	n, i := 0, 0
	for i < len(g.pending) && (i == 0 || n+len(g.pending[i].docs) <= groupInsertMaxDocs) {
		n += len(g.pending[i].docs)
		i++
	}
	batch := g.pending[:i:i]
	g.pending = append([]*groupInsertReq(nil), g.pending[i:]...)
	return batch, n
}
