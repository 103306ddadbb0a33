package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// gatewayClient makes the few admin calls the benchmark needs.
type gatewayClient struct {
	base   string
	apiKey string
	http   *http.Client
}

func (g *gatewayClient) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+g.apiKey)
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("call gateway: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, raw, nil
}

// setup registers the benchmark's event type (kept when it exists) and a
// subscription of its own pointing at target; it returns the subscription id.
func (g *gatewayClient) setup(ctx context.Context, runID, target string) (string, error) {
	if err := g.ensureEventType(ctx, EventType); err != nil {
		return "", err
	}
	return g.subscribe(ctx, "bench-"+runID, EventType, target)
}

// ensureEventType registers code (kept when it exists).
func (g *gatewayClient) ensureEventType(ctx context.Context, code string) error {
	status, raw, err := g.call(ctx, http.MethodPost, "/api/event-types", map[string]any{
		"code": code, "name": "Hooklane benchmark event",
	})
	if err != nil {
		return fmt.Errorf("create event type: %w", err)
	}
	if status != http.StatusCreated && status != http.StatusConflict {
		return fmt.Errorf("create event type %s: answered %d: %s", code, status, raw)
	}
	return nil
}

// subscribe creates a subscription to the exact type eventType and returns its id.
func (g *gatewayClient) subscribe(ctx context.Context, code, eventType, target string) (string, error) {
	status, raw, err := g.call(ctx, http.MethodPost, "/api/subscriptions", map[string]any{
		"code":       code,
		"name":       "Hooklane benchmark",
		"eventTypes": []map[string]string{{"eventTypeCode": eventType}},
		"target":     target,
	})
	if err != nil {
		return "", fmt.Errorf("create subscription: %w", err)
	}
	if status != http.StatusCreated {
		return "", fmt.Errorf("create subscription: answered %d: %s", status, raw)
	}
	return subscriptionID(raw)
}

// subscriptionID reads the id of a created subscription.
func subscriptionID(raw []byte) (string, error) {
	var sub struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &sub); err != nil || sub.ID == "" {
		return "", fmt.Errorf("create subscription: no id in %s", raw)
	}
	return sub.ID, nil
}

func (g *gatewayClient) deleteSubscription(ctx context.Context, id string) error {
	status, raw, err := g.call(ctx, http.MethodDelete, "/api/subscriptions/"+id, nil)
	if err != nil {
		return fmt.Errorf("delete subscription: %w", err)
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("delete subscription: answered %d: %s", status, raw)
	}
	return nil
}
