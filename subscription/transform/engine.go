package transform

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dop251/goja"
	"golang.org/x/sync/semaphore"
)

// Defaults of [Config].
const (
	// TimeoutDefault is HOOKLANE_TRANSFORM_TIMEOUT's default (API.md §9).
	TimeoutDefault = 100 * time.Millisecond
	// MaxResultBytesDefault is HOOKLANE_MAX_EVENT_BYTES's default.
	MaxResultBytesDefault = 1 << 20
	// MaxMemoryDefault bounds what one run may allocate: 64 times the
	// largest event, room for a handler that copies and reshapes it several
	// times.
	MaxMemoryDefault = 64 << 20
	// minPoolSize keeps a few runtimes even on one core, so a hostile
	// handler running to its time limit does not hold every delivery.
	minPoolSize = 4
)

// WatchdogInterval is how often the memory and time watchdog looks at the
// active runs. A run's allocation can pass its bound by what it allocates in
// one interval.
const WatchdogInterval = time.Millisecond

// AbandonGrace is how long Run waits for an interrupted run to return. A run
// still inside one built-in call then is abandoned: Run returns a timeout and
// its runtime is never reused.
const AbandonGrace = time.Second

// Config configures an [Engine]. Zero fields take their defaults.
type Config struct {
	// Timeout is the longest run (HOOKLANE_TRANSFORM_TIMEOUT); default
	// [TimeoutDefault].
	Timeout time.Duration
	// MaxResultBytes bounds the result: its payload's JSON, url and headers
	// together (HOOKLANE_MAX_EVENT_BYTES); default [MaxResultBytesDefault].
	MaxResultBytes int64
	// MaxMemory bounds what one run may allocate, in bytes; default
	// [MaxMemoryDefault]. It also sizes the guarded built-ins: arrays of at
	// most MaxMemory/256 elements, strings of at most MaxMemory/16 bytes.
	MaxMemory int64
	// WallLimit is the longest wall time of a run, however little CPU it
	// got; default ten times Timeout, at least Timeout plus five seconds (a
	// saturated machine was seen to hold a run off the CPU for 30 times its
	// CPU time).
	WallLimit time.Duration
	// PoolSize is the most runs at once (each on its own runtime); more
	// wait. Default: GOMAXPROCS, at least 4.
	PoolSize int
}

// Engine runs compiled transformations on a pool of sandboxed runtimes. It is
// safe for concurrent use; a runtime serves one run at a time.
type Engine struct {
	cfg    Config
	maxLen int64
	maxStr int64
	slots  *semaphore.Weighted // a run holds one; a run alone holds all
	idle   *pool
	wd     watchdog
	fresh  bool // a new runtime for every run (the benchmark's baseline)
	whole  bool // build the input whole, never lazily (tests and benchmarks)
}

// New returns an Engine for cfg.
func New(cfg Config) *Engine {
	cfg.Timeout = cmp.Or(cfg.Timeout, TimeoutDefault)
	cfg.MaxResultBytes = cmp.Or(cfg.MaxResultBytes, MaxResultBytesDefault)
	cfg.MaxMemory = cmp.Or(cfg.MaxMemory, MaxMemoryDefault)
	cfg.WallLimit = cmp.Or(cfg.WallLimit, max(10*cfg.Timeout, cfg.Timeout+5*time.Second))
	cfg.PoolSize = cmp.Or(cfg.PoolSize, max(runtime.GOMAXPROCS(0), minPoolSize))
	return &Engine{
		cfg:    cfg,
		maxLen: max(cfg.MaxMemory/256, 1024),
		maxStr: max(cfg.MaxMemory/16, cfg.MaxResultBytes),
		slots:  semaphore.NewWeighted(int64(cfg.PoolSize)),
		idle:   newPool(cfg.PoolSize),
	}
}

// Config is the engine's configuration with its defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// outcome is what a run's goroutine hands back.
type outcome struct {
	out Output
	err error
}

// errMemorySuspect is a run stopped at the memory bound while other runs
// shared the process: Run runs it again alone.
var errMemorySuspect = errors.New("the process allocated past the bound while other runs were active")

// Run calls prog's handler with in and returns its validated result. A
// failure of the handler or its result is a [*RunError]; ctx ending while the
// run waits for a runtime returns ctx's error, and while it runs a
// [KindTimeout] RunError.
//
// The time limit counts the run's own CPU time where the platform has a
// thread clock (Linux), so a run the scheduler holds off the CPU is not
// failed for it (the watchdog reads the clock from its first look at the
// run, and counts the run's time before that look as at most one
// WatchdogInterval); whatever the CPU time, a run is stopped after
// [Config.WallLimit] of wall time. Waiting for a runtime is bounded by ctx
// only. A run stopped at the memory bound while other runs were active is
// run once more alone, holding every slot, and fails with [KindMemory] only
// if it passes the bound then: the stop hits the run that allocates. Each of
// the (at most two) runs returns within WallLimit plus [AbandonGrace].
func (e *Engine) Run(ctx context.Context, prog *Program, in Input) (Output, error) {
	if err := e.slots.Acquire(ctx, 1); err != nil {
		return Output{}, ctx.Err()
	}
	out, err := e.runOnce(ctx, prog, in, false)
	e.slots.Release(1)
	if !errors.Is(err, errMemorySuspect) {
		return out, err
	}
	all := int64(e.cfg.PoolSize)
	if err := e.slots.Acquire(ctx, all); err != nil {
		return Output{}, ctx.Err()
	}
	defer e.slots.Release(all)
	return e.runOnce(ctx, prog, in, true)
}

// runOnce runs prog on a pooled runtime, under the watchdog; the caller holds
// a slot (every slot when exclusive).
func (e *Engine) runOnce(ctx context.Context, prog *Program, in Input, exclusive bool) (Output, error) {
	sb, err := e.sandbox()
	if err != nil {
		return Output{}, err
	}
	r := &sb.watch
	*r = watched{rt: sb.rt, ctx: ctx, timeout: e.cfg.Timeout, wallLimit: e.cfg.WallLimit, maxMemory: uint64(e.cfg.MaxMemory), exclusive: exclusive} //nolint:gosec // G115: MaxMemory is positive (Config defaults)
	sb.start(func() outcome {
		// The run keeps one OS thread, so the thread's CPU clock measures it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		e.wd.begin(r)
		lazy := !e.whole && !prog.whole
		out, err := e.runIn(sb, prog, in, lazy)
		if lazy && dynamicObjectError(err) && ctx.Err() == nil && e.wd.resume(r) {
			// The handler asked the lazy payload for what only a plain
			// object can do: the same run again, on a plain input.
			out, err = e.runIn(sb, prog, in, false)
		}
		if err != nil {
			err = e.runError(sb, r, err)
		} else {
			e.wd.stop(r)
		}
		return outcome{out: out, err: err}
	})
	sb.abandon.Reset(e.cfg.WallLimit + AbandonGrace)
	select {
	case res := <-sb.done:
		sb.abandon.Stop()
		sb.rt.ClearInterrupt()
		if e.fresh || !e.idle.put(sb) {
			sb.retire()
		}
		return res.out, res.err
	case <-sb.abandon.C:
		sb.dead.Store(true)
		e.wd.stop(r)
		sb.rt.Interrupt(KindTimeout)
		return Output{}, &RunError{Kind: KindTimeout, Message: fmt.Sprintf("the run did not stop within %s", e.cfg.Timeout)}
	}
}

// sandbox takes an idle runtime or makes one.
func (e *Engine) sandbox() (*sandbox, error) {
	if sb := e.idle.take(); sb != nil {
		return sb, nil
	}
	return newSandbox(e.maxLen, e.maxStr)
}

// runIn runs the handler in sb; everything that can call into JavaScript
// (the handler, getters on its result) runs here, under the interrupt. With
// lazy the payload is built lazily (lazy.go), else whole.
func (e *Engine) runIn(sb *sandbox, prog *Program, in Input, lazy bool) (Output, error) {
	rt := sb.rt
	text := orNull(in.Payload)
	src := &inputText{text: text}
	var arg *goja.Object
	if lazy {
		// The scan that checks the text whole (syntax, nesting) before
		// anything is built, as the whole build does, records the tape the
		// lazy payload is built from (tape.go).
		li, v, err := sb.tape.lazyInput(rt, text)
		if err != nil {
			return Output{}, fmt.Errorf("parse input payload: %w", err)
		}
		src.canonical, src.lazy = li.canonical, li
		arg = newArgument(rt, in, v)
	} else {
		v, canonical, err := jsonToValue(rt, text)
		if err != nil {
			return Output{}, fmt.Errorf("parse input payload: %w", err)
		}
		src.canonical = canonical
		if !canonical {
			// The handler may change the payload in place: its text is
			// taken before the run.
			js, err := sb.origStringify(goja.Undefined(), v)
			if err != nil {
				return Output{}, fmt.Errorf("input payload: %w", err)
			}
			src.canon, src.known = js.String(), true
		}
		if arg, err = buildInput(rt, in, v); err != nil {
			return Output{}, err
		}
	}
	makeHandler, err := sb.handlerMaker(prog)
	if err != nil {
		return Output{}, err
	}
	h, err := makeHandler(goja.Undefined())
	if err != nil {
		return Output{}, err
	}
	handler, ok := goja.AssertFunction(h)
	if !ok {
		return Output{}, invalid("handler is not a function")
	}
	res, err := handler(goja.Undefined(), arg)
	if err != nil {
		return Output{}, err
	}
	return e.output(sb, res, in, src)
}

// inputText is the input payload's text, to tell whether the handler
// changed the payload: whether JSON.stringify of what it returned is
// JSON.stringify of the input.
type inputText struct {
	text []byte // the Input's, read only
	// canonical reports that text is JSON.stringify's of the input (see
	// jsonToValue).
	canonical bool
	// canon is JSON.stringify of the input, when known.
	canon string
	known bool
	// lazy is the lazily built payload, nil when it was built whole.
	lazy *lazyInput
}

// changed reports whether s, JSON.stringify of the handler's payload,
// differs from the input's. A text JSON.stringify printed is its own
// JSON.stringify once parsed, so s equal to the text is unchanged whatever
// the text; a canonical text is compared as it is; only a changed payload
// of a text that is not canonical, built lazily, costs a whole build.
func (t *inputText) changed(sb *sandbox, s []byte) (bool, error) {
	if string(s) == string(t.text) {
		return false, nil
	}
	if t.canonical {
		return true, nil
	}
	if !t.known {
		v, _, err := jsonToValue(sb.rt, t.text)
		if err != nil {
			return false, fmt.Errorf("parse input payload: %w", err)
		}
		js, err := sb.origStringify(goja.Undefined(), v)
		if err != nil {
			return false, fmt.Errorf("input payload: %w", err)
		}
		t.canon, t.known = js.String(), true
	}
	return string(s) != t.canon, nil
}

// buildInput makes the handler's argument (API.md §16) in rt, as JSON.parse
// of its JSON would: own data properties in the order method, url (left out
// when empty), headers, payload, eventType, eventId, attempt, cancel.
func buildInput(rt *goja.Runtime, in Input, payload goja.Value) (*goja.Object, error) {
	headers := rt.NewObject()
	proto := headers.Prototype()
	for _, k := range slices.Sorted(maps.Keys(in.Headers)) {
		if err := put(headers, proto, k, rt.ToValue(in.Headers[k])); err != nil {
			return nil, err
		}
	}
	arg := rt.NewObject()
	members := []struct {
		name string
		v    goja.Value
	}{
		{"method", rt.ToValue(in.Method)},
		{"url", rt.ToValue(in.URL)},
		{"headers", headers},
		{"payload", payload},
		{"eventType", rt.ToValue(in.EventType)},
		{"eventId", rt.ToValue(in.EventID)},
		{"attempt", rt.ToValue(in.Attempt)},
		{"cancel", rt.ToValue(in.Cancel)},
	}
	for _, m := range members {
		if m.name == "url" && in.URL == "" {
			continue
		}
		if err := put(arg, proto, m.name, m.v); err != nil {
			return nil, err
		}
	}
	return arg, nil
}

// define gives obj an own, writable, enumerable, configurable data
// property, as JSON.parse makes them ("__proto__" included).
func define(obj *goja.Object, name string, v goja.Value) error {
	if err := obj.DefineDataProperty(name, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
		return fmt.Errorf("input key %q: %w", truncate(name, 100), err)
	}
	return nil
}

// output validates the handler's result against §16 and fills in the members
// it left out.
func (e *Engine) output(sb *sandbox, res goja.Value, in Input, src *inputText) (Output, error) {
	obj, ok := res.(*goja.Object)
	if _, isFunc := goja.AssertFunction(res); !ok || isFunc || obj.ClassName() == "Array" {
		return Output{}, invalid("the handler must return an object, not %s", describe(res))
	}
	out := Output{Method: in.Method, URL: in.URL, Headers: in.Headers, Payload: orNull(in.Payload), Cancel: in.Cancel}
	out.PayloadIsString = len(out.Payload) > 0 && out.Payload[0] == '"'
	size := int64(0)

	if v := obj.Get("method"); present(v) {
		m, ok := v.(goja.String)
		if !ok || !validMethod(m.String()) {
			return Output{}, invalid("method must be POST, PUT or PATCH, not %s", describe(v))
		}
		out.Method = m.String()
	}
	if v := obj.Get("url"); present(v) {
		u, ok := v.(goja.String)
		if !ok {
			return Output{}, invalid("url must be a string, not %s", describe(v))
		}
		if int64(u.Length()) > e.cfg.MaxResultBytes {
			return Output{}, &RunError{Kind: KindTooLarge, Message: "url is longer than the result size limit"}
		}
		if in.URL == "" {
			return Output{}, invalid("url cannot be set: the subscription delivers to a destination")
		}
		if err := checkURL(u.String(), in.URL); err != nil {
			return Output{}, invalid("%v", err)
		}
		out.URL = u.String()
	}
	size += int64(len(out.URL))
	if v := obj.Get("headers"); present(v) {
		h, err := e.headers(sb, v, &size)
		if err != nil {
			return Output{}, err
		}
		out.Headers = h
	}
	if v := obj.Get("payload"); present(v) && src.canonical && src.lazy.untouched(v) {
		// The input's own object, untouched: its text is the input's.
		size += int64(len(out.Payload))
	} else if present(v) {
		js, err := e.payloadJSON(sb, v, e.cfg.MaxResultBytes-size)
		if err != nil {
			return Output{}, err
		}
		if js == nil {
			return Output{}, invalid("payload must be a JSON value, not %s", describe(v))
		}
		out.Payload = json.RawMessage(js)
		out.PayloadIsString = js[0] == '"'
		changed, err := src.changed(sb, js)
		if err != nil {
			return Output{}, err
		}
		out.PayloadChanged = changed
		size += int64(len(js))
	}
	if size > e.cfg.MaxResultBytes {
		return Output{}, &RunError{Kind: KindTooLarge, Message: fmt.Sprintf("the result is more than %d bytes", e.cfg.MaxResultBytes)}
	}
	if v := obj.Get("cancel"); present(v) {
		c, ok := v.Export().(bool)
		if !ok {
			return Output{}, invalid("cancel must be true or false, not %s", describe(v))
		}
		out.Cancel = c
	}
	return out, nil
}

// payloadJSON is the JSON of the result's payload v, at most maxBytes
// (result_json.go), nil when v is not a JSON value; it takes the guarded
// stringify where the writer gives up.
func (e *Engine) payloadJSON(sb *sandbox, v goja.Value, maxBytes int64) ([]byte, error) {
	b := &budget{s: sb, max: maxBytes, what: "the result"}
	if sb.serialize == nil {
		// Functions called from Go, so that a throw (a guard's, a getter's)
		// becomes an error.
		sb.serialize, _ = goja.AssertFunction(sb.rt.ToValue(func(c goja.FunctionCall) goja.Value {
			return sb.stringify(sb.origStringify, c.Argument(0), goja.Undefined(), goja.Undefined(), sb.resultBudget)
		}))
		sb.writeResult, _ = goja.AssertFunction(sb.rt.ToValue(func(c goja.FunctionCall) goja.Value {
			return sb.rt.ToValue(sb.result.write(c.Argument(0)))
		}))
	}
	w := &sb.result
	*w = resultWriter{s: sb, b: b, buf: w.buf[:0], stack: w.stack[:0]}
	wrote, err := sb.writeResult(goja.Undefined(), v)
	js := slices.Clone(w.buf)
	if cap(w.buf) > keptResultBytes {
		w.buf = nil // a large result's buffer is not kept with the runtime
	}
	if err == nil && !w.giveUp {
		if !wrote.ToBoolean() {
			return nil, nil
		}
		return js, nil
	}
	if err != nil {
		if b.exceeded {
			return nil, &RunError{Kind: KindTooLarge, Message: fmt.Sprintf("the result is more than %d bytes", e.cfg.MaxResultBytes)}
		}
		return nil, err
	}
	sb.resultBudget = b
	s, err := sb.serialize(goja.Undefined(), v)
	sb.resultBudget = nil
	if err != nil {
		if b.exceeded {
			return nil, &RunError{Kind: KindTooLarge, Message: fmt.Sprintf("the result is more than %d bytes", e.cfg.MaxResultBytes)}
		}
		return nil, err
	}
	if s == nil || goja.IsUndefined(s) {
		return nil, nil
	}
	return []byte(s.String()), nil
}

// keptResultBytes is the largest result buffer a runtime keeps for its
// next run.
const keptResultBytes = 64 << 10

// headers validates the headers member: an object of string values, names
// that are tokens a transformation may set.
func (e *Engine) headers(sb *sandbox, v goja.Value, size *int64) (map[string]string, error) {
	obj, ok := v.(*goja.Object)
	if _, isFunc := goja.AssertFunction(v); !ok || isFunc || obj.ClassName() == "Array" {
		return nil, invalid("headers must be an object, not %s", describe(v))
	}
	var keys []string
	get := obj.Get
	if o, ok := inputObjectOf(obj); ok && obj.Prototype() == sb.objectProto {
		// The input's own headers object: its members, read as obj.Keys
		// and obj.Get would, without goja's enumeration.
		keys, get = o.Keys(), o.Get
	} else {
		keys = obj.Keys()
	}
	if int64(len(keys)) > sb.maxLen {
		return nil, &RunError{Kind: KindTooLarge, Message: "too many headers"}
	}
	h := make(map[string]string, len(keys))
	for _, k := range keys {
		name := strings.ToLower(k)
		if err := checkHeaderName(name); err != nil {
			return nil, invalid("%v", err)
		}
		if forbiddenHeader(name) {
			return nil, invalid("header %q cannot be set by a transformation", truncate(name, 100))
		}
		if _, dup := h[name]; dup {
			return nil, invalid("header %q is set twice", truncate(name, 100))
		}
		val, ok := get(k).(goja.String)
		if !ok {
			return nil, invalid("header %q must be a string, not %s", truncate(name, 100), describe(get(k)))
		}
		*size += int64(len(name)) + int64(val.Length())
		if *size > e.cfg.MaxResultBytes {
			return nil, &RunError{Kind: KindTooLarge, Message: fmt.Sprintf("the result is more than %d bytes", e.cfg.MaxResultBytes)}
		}
		s := val.String()
		if err := checkHeaderValue(name, s); err != nil {
			return nil, invalid("%v", err)
		}
		h[name] = s
	}
	return h, nil
}

// present reports whether a result member was given (undefined counts as
// left out).
func present(v goja.Value) bool {
	return v != nil && !goja.IsUndefined(v)
}

// describe names a value's type for an error, without its content.
func describe(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	if obj, ok := v.(*goja.Object); ok {
		if _, isFunc := goja.AssertFunction(v); isFunc {
			return "a function"
		}
		if obj.ClassName() == "Array" {
			return "an array"
		}
		return "an object"
	}
	if _, ok := v.(goja.String); ok {
		return "a string"
	}
	return "a " + v.ExportType().String()
}

// errorTimeout bounds reading a thrown object's name and message, which
// can run getters.
const errorTimeout = 10 * time.Millisecond

// runError turns a failed run's error into a RunError and stops watching r.
// Reading a thrown object's name and message can call getters, so it runs
// under a watch of its own: the run's watch may interrupt at any moment once
// its limit or memory bound has passed, and would leave the message empty.
// It is called on the run's goroutine.
func (e *Engine) runError(sb *sandbox, r *watched, err error) error {
	e.wd.stop(r)
	if _, ok := errors.AsType[*goja.InterruptedError](err); ok {
		return runErrorOf(err, e.cfg)
	}
	sb.rt.ClearInterrupt()
	r2 := &watched{rt: sb.rt, ctx: r.ctx, timeout: min(e.cfg.Timeout, errorTimeout), wallLimit: e.cfg.WallLimit, maxMemory: r.maxMemory, exclusive: r.exclusive}
	e.wd.begin(r2)
	defer e.wd.stop(r2)
	return runErrorOf(err, e.cfg)
}

// runErrorOf turns what the VM returned into a RunError with a bounded
// message and the source position of the innermost JavaScript frame.
func runErrorOf(err error, cfg Config) error {
	var re *RunError
	if errors.As(err, &re) {
		return re
	}
	if interrupted, ok := errors.AsType[*goja.InterruptedError](err); ok {
		kind, _ := interrupted.Value().(Kind)
		if kind == kindMemorySuspect {
			return errMemorySuspect
		}
		if kind == kindWhole {
			// Stopped to run again on a whole input, which the watchdog or
			// ctx then stopped (Engine.runOnce): a timeout.
			kind = KindTimeout
		}
		re = &RunError{Kind: cmp.Or(kind, KindTimeout)}
		switch re.Kind {
		case KindMemory:
			re.Message = fmt.Sprintf("the run allocated more than %d bytes", cfg.MaxMemory)
		case kindStarved:
			re.Kind = KindTimeout
			re.Message = fmt.Sprintf("the run took longer than %s of wall time", cfg.WallLimit)
		default:
			re.Message = fmt.Sprintf("the run took longer than %s", cfg.Timeout)
		}
		re.Line, re.Column = position(interrupted.Stack())
		return re
	}
	if overflow, ok := errors.AsType[*goja.StackOverflowError](err); ok {
		re = &RunError{Kind: KindThrow, Message: "RangeError: Maximum call stack size exceeded"}
		re.Line, re.Column = position(overflow.Stack())
		return re
	}
	if exc, ok := errors.AsType[*goja.Exception](err); ok {
		re = &RunError{Kind: KindThrow, Message: cleanMessage(thrownMessage(exc.Value()))}
		re.Line, re.Column = position(exc.Stack())
		return re
	}
	return &RunError{Kind: KindThrow, Message: cleanMessage(truncate(err.Error(), maxErrorBytes))}
}

// unconvertible is the text goja gives a TypeError for an object that has
// no primitive value: "Could not convert " then the object's Go value
// printed with %v (its addresses, property names and values), then
// " to primitive".
const (
	unconvertiblePrefix = "Could not convert "
	unconvertibleSuffix = " to primitive"
	unconvertibleText   = "Cannot convert object to primitive value"
)

// cleanMessage takes out of a run's error message what goja prints of Go
// values: an object it cannot convert to a primitive is named as V8 names
// it, and whatever else looks like a Go pointer (0x and at least 8 hex
// digits) loses its digits. A process address never reaches a job's
// lastError or the test endpoint.
func cleanMessage(msg string) string {
	if i := strings.Index(msg, unconvertiblePrefix); i >= 0 {
		rest := msg[i+len(unconvertiblePrefix):]
		end := strings.LastIndex(rest, unconvertibleSuffix)
		if end < 0 {
			// Cut by truncate before its end.
			end = len(rest)
		} else {
			end += len(unconvertibleSuffix)
		}
		msg = msg[:i] + unconvertibleText + rest[end:]
	}
	if !strings.Contains(msg, "0x") {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		if n := hexRun(msg[i:]); n >= 8 {
			b.WriteString("0x…")
			i += 2 + n
			continue
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hexRun is how many hex digits follow a "0x" at the start of s (0 when s
// does not start with "0x").
func hexRun(s string) int {
	if !strings.HasPrefix(s, "0x") {
		return 0
	}
	n := 0
	for _, c := range []byte(s[2:]) {
		if !isHexDigit(c) {
			break
		}
		n++
	}
	return n
}

// thrownMessage is a thrown value's text, at most maxErrorBytes, taken
// without converting a huge string whole: "Name: message" for an error
// object, the value itself for a primitive.
func thrownMessage(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		return boundedString(v)
	}
	var name, msg string
	// Reading a property can call a getter that throws or spins; the run's
	// interrupt is still armed, and a failure leaves the part empty.
	func() {
		defer func() { _ = recover() }()
		if n := obj.Get("name"); present(n) {
			name = boundedString(n)
		}
		if m := obj.Get("message"); present(m) {
			msg = boundedString(m)
		}
	}()
	switch {
	case name != "" && msg != "":
		return truncate(name+": "+msg, maxErrorBytes)
	case msg != "":
		return msg
	case name != "":
		return name
	}
	return "a thrown " + describe(v)
}

// boundedString converts a primitive to text, cutting a long string before
// it is copied.
func boundedString(v goja.Value) string {
	if s, ok := v.(goja.String); ok {
		if s.Length() > maxErrorBytes {
			return truncate(s.Substring(0, maxErrorBytes).String(), maxErrorBytes)
		}
		return truncate(s.String(), maxErrorBytes)
	}
	if _, ok := v.(*goja.Object); ok {
		return describe(v)
	}
	return truncate(v.String(), maxErrorBytes)
}

// position is the line and column, in the user's source, of the innermost
// frame that has one.
func position(stack []goja.StackFrame) (line, col int) {
	for i := range stack {
		p := stack[i].Position()
		if p.Line == 0 {
			continue
		}
		line, col = p.Line, p.Column
		if line == 1 {
			col = max(col-len(wrapperHead), 1)
		}
		return line, col
	}
	return 0, 0
}

func orNull(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return json.RawMessage("null")
	}
	return p
}
