package memqueue

// visibilityHeap is a min-heap of in-flight messages ordered by the time
// they become receivable again, for container/heap.
type visibilityHeap []*message //nolint:recvcheck // container/heap's shape: Push and Pop change the slice, the rest read it

func (h visibilityHeap) Len() int { return len(h) }

func (h visibilityHeap) Less(i, j int) bool { return h[i].visibleAt.Before(h[j].visibleAt) }

func (h visibilityHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

// Push implements heap.Interface.
func (h *visibilityHeap) Push(x any) {
	m := x.(*message) //nolint:forcetypeassert // only *message is ever pushed
	m.heapIndex = len(*h)
	*h = append(*h, m)
}

// Pop implements heap.Interface.
func (h *visibilityHeap) Pop() any {
	old := *h
	n := len(old) - 1
	m := old[n]
	old[n] = nil
	m.heapIndex = -1
	*h = old[:n]
	return m
}
