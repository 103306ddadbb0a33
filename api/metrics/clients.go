package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// ClientLabelMax is the most distinct client labels per process: the
// first clients seen get a series of their own, every further one counts
// under OtherLabel. A gateway may have tens of thousands of clients, and
// each label value is a series per outcome in every scrape, so only this
// one counter is per client, and it is capped.
const ClientLabelMax = 100

// clientCounters is the per-client event counter, registered at its first
// use (a gateway without clients has no such series).
type clientCounters struct {
	once   sync.Once
	events *prometheus.CounterVec
	labels *labelSet
}

// ObserveClientEvent counts one event of a client (API.md §11) by outcome:
// accepted, duplicate, or refused (unknown client, suspended client, or a
// clientid naming another client than the key's).
func (m *Metrics) ObserveClientEvent(clientID, outcome string) {
	c := &m.clients
	c.once.Do(func() {
		c.labels = newLabelSet(ClientLabelMax)
		c.events = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "client_events_total",
			Help: "Events of clients, by client id (the first 100 seen per process; \"other\" after) and outcome: accepted, duplicate, refused.",
		}, []string{"client", "outcome"})
		m.reg.MustRegister(c.events)
	})
	c.events.WithLabelValues(c.labels.label(clientID), outcome).Inc()
}
