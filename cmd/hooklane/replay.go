package main

import (
	"context"
	"fmt"

	"github.com/hooklane/hooklane/subscription"
)

// subscriptionReader gives replays the subscription as stored now, not
// as the matching cache last saw it: a replay matches against the
// subscription "as it is now" (API.md §13) on every instance.
type subscriptionReader struct {
	st subscription.Store
}

// Get returns one subscription.
func (r subscriptionReader) Get(ctx context.Context, id string) (*subscription.Subscription, error) {
	sub, err := r.st.SubscriptionGetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read subscription %s: %w", id, err)
	}
	return sub, nil
}
