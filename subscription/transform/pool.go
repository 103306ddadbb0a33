package transform

import "sync"

// pool holds the idle runtimes, the one used last on top: a run takes the
// runtime (and its worker goroutine) whose memory is the likeliest to be
// still in the CPU's caches, and under a light load the same few runtimes
// serve every run. A queue handed out the runtime idle longest — with four
// runtimes on two CPUs, a run's whole VM came from main memory each time.
type pool struct {
	mu   sync.Mutex
	idle []*sandbox
	max  int
}

func newPool(size int) *pool { return &pool{idle: make([]*sandbox, 0, size), max: size} }

// take returns the runtime put back last, nil when none is idle.
func (p *pool) take() *sandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	sb := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return sb
}

// put makes sb idle; it reports false when the pool is full (the caller
// then retires sb).
func (p *pool) put(sb *sandbox) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.max {
		return false
	}
	p.idle = append(p.idle, sb)
	return true
}
