package destination

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
)

// Registry is the set of destination types a gateway delivers to, built
// once in wiring. It is immutable, so safe for concurrent use.
type Registry struct {
	types map[string]Type
}

// NewRegistry returns a registry of types. Two types of one name, or a
// type without one, are a programming error: it panics.
func NewRegistry(types ...Type) *Registry {
	r := &Registry{types: make(map[string]Type, len(types))}
	for _, t := range types {
		name := t.Name()
		if name == "" || name != strings.ToLower(name) {
			panic(fmt.Sprintf("destination: type name %q must be lower case and not empty", name))
		}
		if _, dup := r.types[name]; dup {
			panic(fmt.Sprintf("destination: type %q registered twice", name))
		}
		r.types[name] = t
	}
	return r
}

// Names lists the registered type names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.types)) }

// Type returns the registered type of a name.
func (r *Registry) Type(name string) (Type, bool) {
	t, ok := r.types[name]
	return t, ok
}

// DecodeParams are the arguments of [Registry.Decode]: a subscription's
// destination as a create or PATCH request sends it, with what it is
// checked against.
type DecodeParams struct {
	// Raw is the request's "destination" object.
	Raw json.RawMessage
	// Stored is the subscription's destination before a PATCH; nil on
	// create. A secret sent as "***" keeps Stored's value, unless the
	// broker's address changed.
	Stored *Destination
	// DataOnly is the subscription's dataOnly after the request (binary
	// content mode; refused on a structured-only type, at /dataOnly).
	DataOnly bool
	// Headers are the subscription's headers after the request (a type
	// may bound their number or names, at /headers).
	Headers map[string]string
}

// Decode decodes and validates a destination from a create or PATCH
// request (API.md §15). Broken rules are a *ValidationError with pointers
// into the request body: /destination/type for a missing or unknown
// type, /destination/<field> for the type's fields, the pointer of a
// secret sent as "***" that cannot be kept (nothing stored, or the
// broker's address changed: a secret is never sent to a new address
// without being given again, §14), /dataOnly and /headers. Decode does no
// I/O; the caller runs [Registry.CheckAddresses] next.
func (r *Registry) Decode(p *DecodeParams) (*Destination, error) {
	doc, err := decodeDoc(p.Raw)
	obj, isObj := doc.(map[string]any)
	if err != nil || !isObj {
		return nil, invalid([]Problem{{Pointer: "/destination", Message: "must be an object with a type"}})
	}
	t, err := r.typeOf(obj)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	kept, secretProblems := keepSecrets(t, obj, p.Stored)
	problems = append(problems, prefixed("/destination", secretProblems)...)
	merged, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode destination: %w", err)
	}
	d, err := newDestination(t, merged)
	if err != nil {
		return nil, mergeProblems(problems, err)
	}
	if len(kept) > 0 && !slices.Equal(d.Config.Audience(), p.Stored.Config.Audience()) {
		for _, ptr := range kept {
			problems = append(problems, Problem{
				Pointer: "/destination" + ptr,
				Message: `the broker's address changed: send this secret again ("***" keeps it only for the same address)`,
			})
		}
	}
	problems = append(problems, checkMessageRules(t.Binding(), t.Name(), p)...)
	if err := invalid(problems); err != nil {
		return nil, err
	}
	return d, nil
}

// Load decodes a stored destination (its [Destination.MarshalJSON]
// form). A stored destination that no longer decodes (its type was
// unregistered, a rule tightened) is an error.
func (r *Registry) Load(stored []byte) (*Destination, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(stored, &head); err != nil {
		return nil, fmt.Errorf("decode stored destination: %w", err)
	}
	t, ok := r.types[head.Type]
	if !ok {
		return nil, fmt.Errorf("stored destination: unknown type %q", head.Type)
	}
	return newDestination(t, stored)
}

// CheckFunc checks one broker host (a name or an IP address, without
// port) as the gateway checks an HTTP target: it refuses loopback and
// private addresses unless they are allowed.
type CheckFunc func(ctx context.Context, host string) error

// CheckAddresses runs check on every broker address of d and returns a
// *ValidationError with a problem at the pointer of each one refused
// (/destination/brokers/0 ...), or nil.
func (r *Registry) CheckAddresses(ctx context.Context, d *Destination, check CheckFunc) error {
	var problems []Problem
	for _, a := range d.Config.Addresses() {
		if err := check(ctx, a.Host); err != nil {
			problems = append(problems, Problem{Pointer: "/destination" + a.Pointer, Message: err.Error()})
		}
	}
	return invalid(problems)
}

// typeOf returns the registered type a destination object names.
func (r *Registry) typeOf(obj map[string]any) (Type, error) {
	v, ok := obj["type"]
	name, isStr := v.(string)
	if !ok || v == nil {
		return nil, invalid([]Problem{{Pointer: "/destination/type", Message: "is required (one of " + strings.Join(r.Names(), ", ") + ")"}})
	}
	t, known := r.types[name]
	if !isStr || !known {
		return nil, invalid([]Problem{problemf("/destination/type", "must be one of %s", strings.Join(r.Names(), ", "))})
	}
	return t, nil
}

// newDestination decodes raw with t and keeps its stored form.
func newDestination(t Type, raw []byte) (*Destination, error) {
	cfg, err := t.Decode(raw)
	if err != nil {
		return nil, err
	}
	fields, err := cfg.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s destination: %w", t.Name(), err)
	}
	stored, err := withType(t.Name(), fields)
	if err != nil {
		return nil, err
	}
	return &Destination{Type: t, Config: cfg, stored: stored, secrets: secretValues(t, stored)}, nil
}

// withType puts "type" first in a config's JSON object.
func withType(name string, fields []byte) ([]byte, error) {
	typ, err := json.Marshal(name)
	if err != nil {
		return nil, fmt.Errorf("encode type: %w", err)
	}
	out := append([]byte(`{"type":`), typ...)
	inner := strings.TrimSpace(string(fields))
	if !strings.HasPrefix(inner, "{") || !strings.HasSuffix(inner, "}") {
		return nil, fmt.Errorf("%s destination does not marshal to an object", name)
	}
	if body := strings.TrimSpace(inner[1 : len(inner)-1]); body != "" {
		out = append(out, ',')
		out = append(out, body...)
	}
	return append(out, '}'), nil
}

// mergeProblems adds the type's validation problems, prefixed with
// /destination, to problems; another error is returned as it is.
func mergeProblems(problems []Problem, err error) error {
	ve, ok := err.(*ValidationError) //nolint:errorlint // Decode returns the type's own error unwrapped
	if !ok {
		return err
	}
	return invalid(append(problems, prefixed("/destination", ve.Problems)...))
}

// checkMessageRules checks dataOnly and the headers against a binding.
func checkMessageRules(b Binding, name string, p *DecodeParams) []Problem {
	var problems []Problem
	if p.DataOnly && !b.Binary {
		problems = append(problems, problemf("/dataOnly", "a %s destination is structured only: dataOnly must be false", name))
	}
	if b.MaxHeaders > 0 && len(p.Headers) > b.MaxHeaders {
		problems = append(problems, problemf("/headers", "a %s destination carries at most %d headers", name, b.MaxHeaders))
	}
	if b.HeaderNameFunc != nil {
		for _, k := range slices.Sorted(maps.Keys(p.Headers)) {
			if err := b.HeaderNameFunc(k); err != nil {
				problems = append(problems, Problem{Pointer: "/headers/" + EscapePointer(k), Message: err.Error()})
			}
		}
	}
	return problems
}

// splitAddress is net.SplitHostPort for an address that may lack a port.
func splitAddress(addr string) (host, port string) {
	if h, p, err := net.SplitHostPort(addr); err == nil {
		return h, p
	}
	return addr, ""
}
