package dispatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A clean circuit read before a failure's forget (and its write) must not
// be remembered after it: the failure's write may have opened the circuit,
// and for a whole TTL every gate would let deliveries through.
func TestCleanCircuitsRefuseReadsBegunBeforeAForget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	cc := newCleanCircuits(time.Second)
	clean := closedCircuit("sub-1")

	since := cc.begin()
	cc.forget("sub-1") // a failure counted while the read was under way
	cc.saw(clean, now, since)
	require.False(t, cc.fresh("sub-1", now), "read begun before the forget")

	cc.saw(clean, now, cc.begin())
	require.True(t, cc.fresh("sub-1", now), "read begun after the forget")
	require.False(t, cc.fresh("sub-1", now.Add(time.Second)), "the TTL passed")

	since = cc.begin()
	cc.forget("sub-2") // another subscription's forget refuses nothing here
	cc.saw(clean, now, since)
	require.True(t, cc.fresh("sub-1", now))

	cc.saw(&Circuit{SubscriptionID: "sub-1", State: CircuitOpen}, now, cc.begin())
	require.False(t, cc.fresh("sub-1", now), "a circuit read not clean is forgotten")
}

// When the map is full, the entries that are not fresh make room; the
// forgets they carried still refuse the reads begun before them.
func TestCleanCircuitsDropStaleEntriesButKeepTheirForgets(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	cc := newCleanCircuits(time.Second)
	since := cc.begin()
	cc.forget("late")
	for i := range cleanCircuitsMax - 1 {
		cc.saw(closedCircuit(fmt.Sprint("sub-", i)), now, cc.begin())
	}
	require.Equal(t, cleanCircuitsMax, cc.size())

	later := now.Add(2 * time.Second) // every clean entry is stale
	cc.saw(closedCircuit("new"), later, cc.begin())
	require.True(t, cc.fresh("new", later))
	require.Equal(t, 1, cc.size(), "the stale entries and the forgotten one were dropped")
	cc.saw(closedCircuit("late"), later, since)
	require.False(t, cc.fresh("late", later), "the dropped entry's forget still refuses the read begun before it")
	cc.saw(closedCircuit("late"), later, cc.begin())
	require.True(t, cc.fresh("late", later))

	for i := range cleanCircuitsMax - 2 {
		cc.saw(closedCircuit(fmt.Sprint("sub-", i)), later, cc.begin())
	}
	require.Equal(t, cleanCircuitsMax, cc.size())
	cc.saw(closedCircuit("full"), later, cc.begin())
	require.False(t, cc.fresh("full", later), "every entry is fresh: nothing new is remembered")
}

// size returns how many entries cc holds (a count, not the map: a failed
// assertion must not print fifty thousand entries).
func (cc *cleanCircuits) size() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.at)
}
