package subscription

import "github.com/hooklane/hooklane/event/cloudevent"

// The gateway's operational events (package operational) are ordinary
// events of source OperationalSource. One about a subscription carries its
// id in the ExtSubscriptionID extension, and never matches that
// subscription: a subscription to "hooklane.*" whose own deliveries fail
// must not be sent the news of its own failures (no feedback loop).
const (
	// OperationalSource is the source of the gateway's operational events.
	OperationalSource = "/hooklane"
	// ExtSubscriptionID is the extension naming the subscription an
	// operational event is about.
	ExtSubscriptionID = "subscriptionid"
)

// aboutItself reports whether ev is an operational event about sub.
func aboutItself(ev *cloudevent.Event, sub *Subscription) bool {
	return ev.Source == OperationalSource && ev.Ext(ExtSubscriptionID) == sub.ID
}
