package subscription

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hooklane/hooklane/destination"
	"github.com/hooklane/hooklane/dispatch"
)

// A push subscription delivers to exactly one of Target (an HTTP
// endpoint) or Destination (a message broker, API.md §15). The
// subscription package knows no destination type: the Service decodes and
// checks Destination with the destination.Registry it is given, keeps its
// stored form (secrets in clear) in the subscription, and its targetUrl
// (the type's, without secrets) in TargetURL, which the jobs carry and the
// router routes on (its scheme names the type's transport).

// destinationSealedMember names the member of a destination sealed for
// storage: {"type": "kafka", "sealed": "enc:v1:…"}. No type has a field of
// that name.
const destinationSealedMember = "sealed"

// HasDestination reports whether the subscription delivers to a message
// broker rather than an HTTP target.
func (s *Subscription) HasDestination() bool { return len(s.Destination) > 0 }

// DestinationType returns the destination's type ("kafka"), or "" for a
// subscription without one.
func (s *Subscription) DestinationType() string {
	if !s.HasDestination() {
		return ""
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(s.Destination, &head); err != nil {
		return ""
	}
	return head.Type
}

// DeliveryTarget is where the subscription's deliveries go, as a job's
// targetUrl: the destination's targetUrl (its scheme names the broker:
// "kafka://broker-1:9092/orders") when it has a destination, the target
// otherwise.
func (s *Subscription) DeliveryTarget() string {
	if s.HasDestination() {
		return s.TargetURL
	}
	return s.Target
}

// normalizeDestination makes a JSON null destination (a PATCH removing
// it) none at all.
func (s *Subscription) normalizeDestination() {
	if t := bytes.TrimSpace(s.Destination); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		s.Destination = nil
	}
	if !s.HasDestination() {
		s.TargetURL = ""
		s.destinationView = nil
	}
}

// validateDestinationShape checks that a push subscription has exactly
// one of target and destination, a pull one no destination, and that a
// destination comes without the HTTP-only auth and tls (API.md §14–15).
// A transformation is allowed: the broker transport runs it (API.md §16).
// The destination's own fields are the registry's to check.
func (s *Subscription) validateDestinationShape() []FieldError {
	if !s.HasDestination() {
		return nil
	}
	var errs []FieldError
	add := func(ptr, msg string) { errs = append(errs, FieldError{Pointer: ptr, Message: msg}) }
	if s.Delivery == dispatch.DeliveryPull {
		add("/destination", "applies to push delivery only")
	}
	if s.Target != "" {
		add("/destination", "a subscription has a target or a destination, not both")
	}
	if s.Auth != nil {
		add("/auth", "applies to an HTTP target only: a destination carries its own credentials")
	}
	if s.TLS != nil {
		add("/tls", "applies to an HTTP target only: a destination carries its own tls")
	}
	return errs
}

// decodeDestination decodes and validates sub's destination with the
// registry, against stored (the subscription's destination before a
// PATCH, nil on create), and on success replaces it with its stored form
// and sets TargetURL. It returns the decoded destination (nil when sub
// has none) and the problems, pointers into the request body.
func (s *Service) decodeDestination(sub *Subscription, stored *destination.Destination) (*destination.Destination, []FieldError, error) {
	if !sub.HasDestination() {
		return nil, nil, nil
	}
	if s.cfg.Destinations == nil {
		return nil, []FieldError{{Pointer: "/destination/type", Message: "no destination type is enabled on this gateway"}}, nil
	}
	d, err := s.cfg.Destinations.Decode(&destination.DecodeParams{
		Raw: sub.Destination, Stored: stored, DataOnly: sub.DataOnly, Headers: sub.Headers,
	})
	if err != nil {
		errs, ok := destinationProblems(err)
		if !ok {
			return nil, nil, fmt.Errorf("decode destination: %w", err)
		}
		return nil, errs, nil
	}
	raw, err := d.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("encode destination: %w", err)
	}
	sub.Destination, sub.TargetURL, sub.destinationView = raw, d.TargetURL(), d.Masked()
	return d, nil, nil
}

// checkDestinationAddresses runs the target check on every broker address
// of d (API.md §15: the same as target's), problems at their pointers.
func (s *Service) checkDestinationAddresses(ctx context.Context, d *destination.Destination) ([]FieldError, error) {
	if d == nil || s.cfg.PublicHostFunc == nil {
		return nil, nil
	}
	err := s.cfg.Destinations.CheckAddresses(ctx, d, func(ctx context.Context, host string) error {
		public, err := s.cfg.PublicHostFunc(ctx, host)
		switch {
		case err != nil:
			return errors.New("host could not be resolved")
		case !public:
			return errors.New("resolves to a loopback, private or otherwise non-public address")
		}
		return nil
	})
	if err == nil {
		return nil, nil
	}
	errs, ok := destinationProblems(err)
	if !ok {
		return nil, fmt.Errorf("check destination addresses: %w", err)
	}
	return errs, nil
}

// storedDestination decodes the stored destination of cur; nil when it
// has none or it no longer decodes (its type unregistered): a PATCH then
// keeps no secret of it.
func (s *Service) storedDestination(cur *Subscription) *destination.Destination {
	if !cur.HasDestination() || s.cfg.Destinations == nil {
		return nil
	}
	d, err := s.cfg.Destinations.Load(cur.Destination)
	if err != nil {
		return nil
	}
	return d
}

// withDestinationViews sets the masked destination answers show on each
// subscription that has one. A stored destination that no longer decodes
// (its type unregistered) shows its type only.
func (s *Service) withDestinationViews(subs ...*Subscription) {
	for _, sub := range subs {
		if !sub.HasDestination() || sub.destinationView != nil {
			continue
		}
		if d := s.storedDestination(sub); d != nil {
			sub.destinationView = d.Masked()
			continue
		}
		sub.destinationView = typeOnlyView(sub.DestinationType())
	}
}

// typeOnlyView is {"type": name}: what an answer shows of a destination it
// cannot mask field by field.
func typeOnlyView(name string) json.RawMessage {
	b, err := json.Marshal(map[string]string{"type": name})
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// destinationProblems turns a *destination.ValidationError into field
// errors; ok is false for any other error.
func destinationProblems(err error) ([]FieldError, bool) {
	ve, ok := errors.AsType[*destination.ValidationError](err)
	if !ok {
		return nil, false
	}
	errs := make([]FieldError, len(ve.Problems))
	for i, p := range ve.Problems {
		errs[i] = FieldError(p)
	}
	return errs, true
}

// mapDestinationSecrets returns the destination with f applied to it as
// one secret, for the store adapters (MapSecrets): the whole stored form
// is sealed as one value, kept beside its type as
// {"type": …, "sealed": f(stored form)}; a sealed destination is opened
// back into its stored form when f returns a JSON object. With no key (f
// keeps the value) the stored form stays as it is.
func mapDestinationSecrets(raw json.RawMessage, f func(string) (string, error)) (json.RawMessage, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil // none (a document store writes a nil one as null)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode destination: %w", err)
	}
	in := string(raw)
	if sealed, ok := doc[destinationSealedMember]; ok {
		if err := json.Unmarshal(sealed, &in); err != nil {
			return nil, fmt.Errorf("decode sealed destination: %w", err)
		}
	}
	out, err := f(in)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace([]byte(out)); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return json.RawMessage(out), nil
	}
	wrapped, err := json.Marshal(map[string]json.RawMessage{
		"type": doc["type"], destinationSealedMember: mustMarshalString(out),
	})
	if err != nil {
		return nil, fmt.Errorf("encode sealed destination: %w", err)
	}
	return wrapped, nil
}

func mustMarshalString(s string) json.RawMessage {
	b, _ := json.Marshal(s) //nolint:errchkjson // a string always encodes
	return b
}

// DestinationWebhook is the kind of a push subscription with an HTTP
// target, as ?destinationType= names it beside the destination types.
const DestinationWebhook = "webhook"

// destinationTypeMaxLength bounds a ?destinationType= value.
const destinationTypeMaxLength = 64

// CheckDestinationType returns a *Rejection unless kind is "" (no filter),
// DestinationWebhook or a registered destination type.
func (s *Service) CheckDestinationType(kind string) error {
	if kind == "" || kind == DestinationWebhook {
		return nil
	}
	var names []string
	if s.cfg.Destinations != nil {
		names = s.cfg.Destinations.Names()
		if _, ok := s.cfg.Destinations.Type(kind); ok && len(kind) <= destinationTypeMaxLength {
			return nil
		}
	}
	msg := "query parameter destinationType must be one of " + strings.Join(append(names, DestinationWebhook), ", ")
	return &Rejection{Detail: "destinationType is not a known kind", Errors: []FieldError{{Pointer: "", Message: msg}}}
}

// isKind reports whether sub is of kind ("" matches every subscription).
func (s *Subscription) isKind(kind string) bool {
	switch kind {
	case "":
		return true
	case DestinationWebhook:
		return !s.HasDestination() && s.Delivery != dispatch.DeliveryPull
	}
	return s.DestinationType() == kind
}
