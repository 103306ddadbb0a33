package schema

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/store"
)

// RefreshIntervalDefault is how often the registry asks the store whether
// another instance changed an event type.
const RefreshIntervalDefault = time.Second

// maxUnknownCached bounds how many unregistered codes the cache remembers:
// producers choose the codes they send, so remembering every one would let
// them grow the cache without limit. Past it, an unknown code costs a store
// read per event.
const maxUnknownCached = 10_000

// RegistryStore is what the Registry needs of the store.
type RegistryStore interface {
	EventTypeGet(ctx context.Context, code string) (*EventType, error)
	EventTypeGeneration(ctx context.Context) (int64, error)
}

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	Store RegistryStore
	// AllowUnknownTypes accepts events of unregistered types (their data is
	// not validated). Default false.
	AllowUnknownTypes bool
	// RefreshInterval bounds how stale the cache may be for changes made by
	// other instances. Default 1 s.
	RefreshInterval time.Duration
	Logger          *slog.Logger
	NowFunc         func() time.Time
}

// Registry resolves and validates event data against the versioned schemas
// of event types (API.md §1 steps 3 and 4). It caches types and compiled
// schemas; Invalidate drops the cache at once, and a change made on another
// instance is seen within RefreshInterval.
type Registry struct {
	cfg RegistryConfig

	mu        sync.Mutex
	types     map[string]*cachedType
	gen       int64
	checkedAt time.Time
	// epoch counts cache drops, so a store read that raced with one is not
	// cached: it may predate the change that caused the drop.
	epoch uint64
	// unknown counts cached entries for codes that are not registered.
	unknown int
}

type cachedType struct {
	t        *EventType // nil when the type does not exist
	compiled map[string]*jsonschema.Schema
	// failed holds the compile error of each version whose stored schema
	// does not compile, so it is compiled and logged once, not per event.
	failed map[string]error
}

// Resolution is the outcome of a successful validation.
type Resolution struct {
	// Version is the schema version the data was validated against, "" when
	// the type has no versions (or is unknown and allowed).
	Version string
	// Deprecated is true when that version is DEPRECATED.
	Deprecated bool
}

// Rejection is input that breaks a rule; the API answers it with 422.
// For an event (Registry.Validate) pointers address the event in
// structured form; for a Catalog request they address the request body,
// and for Catalog.ValidateData the {"data": …} document.
type Rejection struct { //nolint:errname // a verdict on the input, answered as 422; the name says what it is, not how it travels
	Detail     string
	Violations []Violation
	// Err is set when the data could not be judged rather than failed the
	// schema: a panic of the validator, a stored schema that no longer
	// compiles. The event is refused all the same; Err is for the log.
	Err error
}

// Unwrap returns Err.
func (r *Rejection) Unwrap() error { return r.Err }

// Violation is one schema problem at a JSON pointer.
type Violation struct {
	Pointer string
	Message string
}

func (r *Rejection) Error() string { return r.Detail }

// NewRegistry returns a registry.
func NewRegistry(cfg RegistryConfig) *Registry {
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = RefreshIntervalDefault
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{cfg: cfg, types: make(map[string]*cachedType)}
}

// Invalidate drops every cached type, so the next validation reads the
// store. The instance that changes a type calls it.
func (r *Registry) Invalidate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked()
}

func (r *Registry) dropLocked() {
	clear(r.types)
	r.epoch++
	r.unknown = 0
}

// Validate checks that ev's type is registered and CURRENT, resolves the
// schema version its data uses, and validates the data. It returns a
// *Rejection for an event that breaks a rule, and other errors for store
// failures.
func (r *Registry) Validate(ctx context.Context, ev *cloudevent.Event) (Resolution, error) {
	ct, err := r.lookup(ctx, ev.Type)
	if err != nil {
		return Resolution{}, err
	}
	if ct.t == nil {
		if r.cfg.AllowUnknownTypes {
			return Resolution{}, nil
		}
		return Resolution{}, &Rejection{
			Detail:     fmt.Sprintf("event type %q is not registered", ev.Type),
			Violations: []Violation{{Pointer: "/type", Message: "is not a registered event type"}},
		}
	}
	if ct.t.Status != TypeCurrent {
		return Resolution{}, &Rejection{
			Detail:     fmt.Sprintf("event type %q is %s and accepts no events", ev.Type, ct.t.Status),
			Violations: []Violation{{Pointer: "/type", Message: "event type is " + string(ct.t.Status)}},
		}
	}
	v, rej := resolveVersion(ct.t, ev.Ext(cloudevent.ExtDataVersion))
	if rej != nil {
		return Resolution{}, rej
	}
	if v == nil {
		return Resolution{}, nil
	}
	res := Resolution{Version: v.Version, Deprecated: v.Status == VersionDeprecated}
	sch, err := r.compiled(ctx, ct, v)
	if err != nil {
		// A stored schema that no longer compiles (stored before a rule
		// of Compile existed) is not the producer's fault, but retrying
		// cannot help either: refuse the event (422); compiled logged it
		// for the operator, who must fix the version.
		return Resolution{}, &Rejection{
			Detail:     fmt.Sprintf("the schema of %s version %s does not compile; the event type's owner must fix it", ev.Type, v.Version),
			Violations: []Violation{{Pointer: "/data", Message: "cannot be validated: the schema of version " + v.Version + " does not compile"}},
			Err:        err,
		}
	}
	if sch == nil {
		return res, nil
	}
	if err := validateData(sch, ev); err != nil {
		var rej *Rejection
		if errors.As(err, &rej) && rej.Err != nil {
			r.cfg.Logger.WarnContext(ctx, "event data could not be validated", "event_type", ev.Type, "version", v.Version, "error", rej.Err)
		}
		return Resolution{}, err
	}
	return res, nil
}

func (r *Registry) lookup(ctx context.Context, code string) (*cachedType, error) {
	r.mu.Lock()
	now := r.cfg.NowFunc()
	if now.Sub(r.checkedAt) >= r.cfg.RefreshInterval {
		r.mu.Unlock()
		gen, err := r.cfg.Store.EventTypeGeneration(ctx)
		if err != nil {
			return nil, fmt.Errorf("read event type generation: %w", err)
		}
		r.mu.Lock()
		r.checkedAt = now
		if gen != r.gen {
			r.gen = gen
			r.dropLocked()
		}
	}
	ct, ok := r.types[code]
	epoch := r.epoch
	r.mu.Unlock()
	if ok {
		return ct, nil
	}
	t, err := r.cfg.Store.EventTypeGet(ctx, code)
	switch {
	case errors.Is(err, store.ErrNotFound):
		t = nil
	case err != nil:
		return nil, fmt.Errorf("get event type %s: %w", code, err)
	}
	ct = &cachedType{t: t, compiled: make(map[string]*jsonschema.Schema)}
	r.mu.Lock()
	switch {
	case r.epoch != epoch:
	case t != nil:
		r.types[code] = ct
	case r.unknown < maxUnknownCached:
		r.types[code] = ct
		r.unknown++
	}
	r.mu.Unlock()
	return ct, nil
}

// resolveVersion applies API.md §1 step 4's version choice. It returns nil
// (and no rejection) when the type has no versions.
func resolveVersion(t *EventType, requested string) (*Version, *Rejection) {
	if len(t.Versions) == 0 {
		return nil, nil
	}
	if requested != "" {
		for i := range t.Versions {
			if t.Versions[i].Version == requested {
				return &t.Versions[i], nil
			}
		}
		return nil, &Rejection{
			Detail:     fmt.Sprintf("event type %q has no schema version %q", t.Code, requested),
			Violations: []Violation{{Pointer: "/dataversion", Message: "unknown schema version " + strconv.Quote(requested)}},
		}
	}
	var newest *Version
	for i := range t.Versions {
		v := &t.Versions[i]
		if v.Status == VersionCurrent && (newest == nil || CompareVersions(v.Version, newest.Version) > 0) {
			newest = v
		}
	}
	if newest == nil {
		return nil, &Rejection{
			Detail:     fmt.Sprintf("event type %q has no CURRENT schema version: name one with the dataversion extension", t.Code),
			Violations: []Violation{{Pointer: "/dataversion", Message: "is required: the type has no CURRENT version"}},
		}
	}
	return newest, nil
}

// CompareVersions compares two MAJOR.MINOR versions numerically.
func CompareVersions(a, b string) int {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	for i := range 2 {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (r *Registry) compiled(ctx context.Context, ct *cachedType, v *Version) (*jsonschema.Schema, error) {
	if len(v.Schema) == 0 {
		return nil, nil //nolint:nilnil // a version without a schema constrains nothing: the caller accepts any data
	}
	r.mu.Lock()
	sch, ok := ct.compiled[v.Version]
	failed := ct.failed[v.Version]
	r.mu.Unlock()
	if ok {
		return sch, nil
	}
	if failed != nil {
		return nil, failed
	}
	sch, err := Compile(ct.t.Code, v.Version, v.Schema)
	if err != nil {
		err = fmt.Errorf("compile schema %s %s: %w", ct.t.Code, v.Version, err)
		r.cfg.Logger.WarnContext(ctx, "stored schema does not compile", "event_type", ct.t.Code, "version", v.Version, "error", err)
		r.mu.Lock()
		if ct.failed == nil {
			ct.failed = make(map[string]error)
		}
		ct.failed[v.Version] = err
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Lock()
	ct.compiled[v.Version] = sch
	r.mu.Unlock()
	return sch, nil
}
