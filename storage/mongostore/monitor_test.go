package mongostore_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/mongostore"
	"github.com/hooklane/hooklane/store"
)

// commandCounter counts commands by name, safe for concurrent use.
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *commandCounter) add(name string) {
	if strings.HasPrefix(name, "relay:") {
		return // the status relay's, whenever its goroutine runs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[name]++
}

// take returns the counts so far and starts again from zero.
func (c *commandCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

func TestOnCommandFuncCountsEveryCommand(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	counter := &commandCounter{n: map[string]int{}}
	s := env.open(t, env.newDatabase(t), func(cfg *mongostore.Config) { cfg.OnCommandFunc = counter.add })
	require.NotEmpty(t, counter.take(), "Open's commands (ping, index creation) are counted")

	_, err := s.PoolGetByCode(t.Context(), "no-such-pool")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, map[string]int{"find": 1}, counter.take())
}

func TestOnCommandFuncNamesGuardCommandsApart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	counter := &commandCounter{n: map[string]int{}}
	s := b.env.open(t, b.env.newDatabase(t), func(cfg *mongostore.Config) { cfg.OnCommandFunc = counter.add })
	job := b.newJob("")
	require.NoError(t, s.JobInsertMany(b.ctx, &dispatch.JobInsertManyParams{Jobs: []*dispatch.Job{job}}))

	s.SetWriteGuards(true)
	counter.take()
	job.Worker = "w-1"
	require.NoError(t, s.JobUpdate(b.ctx, &dispatch.JobUpdateParams{Job: job}))
	require.Equal(t, map[string]int{"guard:insert": 1, "guard:find": 1, "update": 1, "guard:delete": 1}, counter.take(),
		"the guard's insert, version read and delete are named apart; the replace is the command MongoDB is sent too")
}
