package transform

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// maxCallStack bounds the handler's call depth: deep recursion ends in a
// RangeError instead of growing the Go stack.
const maxCallStack = 1000

// removedGlobals are the built-ins outside §16's sandbox. Each is either
// useless to a transformation or a way around the limits: eval and Function
// compile code of any size (the parser recurses per nesting level, past the
// Go stack's limit), typed arrays and ArrayBuffer allocate any size in one
// call, BigInt operations take any time in one step, Promise queues work past
// the run.
func removedGlobals() []string {
	return []string{
		"eval", "Function", "BigInt", "Proxy", "Reflect", "Promise",
		"Map", "Set", "WeakMap", "WeakSet", "WeakRef", "FinalizationRegistry",
		"ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics",
		"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
		"Int32Array", "Uint32Array", "Float32Array", "Float64Array",
		"BigInt64Array", "BigUint64Array", "Float16Array",
	}
}

// sandbox is one locked-down runtime and the guards installed in it.
type sandbox struct {
	rt     *goja.Runtime
	maxLen int64 // longest array-like a guarded built-in walks
	maxStr int64 // longest string a guarded built-in builds, in bytes
	depth  int   // nesting of the guarded join and stringify

	rangeError    goja.Value
	parse         goja.Callable // goja's JSON.parse
	origStringify goja.Callable // goja's JSON.stringify

	// counter is the guarded stringify's replacer and call the state of the
	// innermost guarded stringify (guard_json.go); serialize stringifies a
	// result's payload under resultBudget. Each is made once.
	counter      goja.Value
	call         *stringifyCall
	serialize    goja.Callable
	resultBudget *budget
	// writeResult writes a result's payload with result, the writer kept
	// from run to run with its buffer (result_json.go).
	writeResult goja.Callable
	result      resultWriter

	// watch is the run's watch (watchdog.go), and worker the goroutine
	// that runs the sandbox's runs (worker.go).
	watch watched
	worker

	// makers are the programs' handler makers made in this runtime, frozen
	// (handlerMaker); freeze is Object.freeze.
	makers map[*goja.Program]goja.Callable
	freeze goja.Callable
	// objectProto is Object.prototype.
	objectProto *goja.Object
	// tape holds a lazily built payload's tape buffers (tape.go), kept
	// from run to run.
	tape tapeBuf
}

// newSandbox makes a runtime, removes what §16 leaves out, guards the
// built-ins that can loop or allocate without end in one call, and freezes
// every built-in.
func newSandbox(maxLen, maxStr int64) (*sandbox, error) {
	rt := goja.New()
	rt.SetMaxCallStackSize(maxCallStack)
	s := &sandbox{rt: rt, maxLen: maxLen, maxStr: maxStr, rangeError: rt.Get("RangeError"), worker: newWorker()}
	// Guards first: they look built-ins up by their global names.
	if err := s.guard(); err != nil {
		return nil, err
	}
	// The lockdown needs a Set, which the sandbox then removes.
	set := rt.Get("Set")
	g := rt.GlobalObject()
	for _, name := range removedGlobals() {
		if err := g.Delete(name); err != nil {
			return nil, fmt.Errorf("sandbox delete %s: %w", name, err)
		}
	}
	noCompile := rt.ToValue(func(goja.FunctionCall) goja.Value {
		panic(rt.NewTypeError("code cannot be compiled at run time in a transformation"))
	})
	for _, src := range []string{`(function(){})`, `(function*(){})`, `(async function(){})`} {
		fv, err := rt.RunString(src)
		if err != nil {
			return nil, fmt.Errorf("sandbox function kinds: %w", err)
		}
		proto := fv.ToObject(rt).Prototype()
		if err := proto.DefineDataProperty("constructor", noCompile, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
			return nil, fmt.Errorf("sandbox constructor: %w", err)
		}
	}
	lockdown, err := rt.RunString(lockdownJS)
	if err != nil {
		return nil, fmt.Errorf("sandbox lockdown: %w", err)
	}
	lockdownFunc, _ := goja.AssertFunction(lockdown)
	if _, err := lockdownFunc(goja.Undefined(), set); err != nil {
		return nil, fmt.Errorf("sandbox lockdown: %w", err)
	}
	s.freeze, _ = goja.AssertFunction(rt.Get("Object").ToObject(rt).Get("freeze"))
	s.objectProto = rt.NewObject().Prototype()
	return s, nil
}

// maxMakers bounds the handler makers a runtime keeps: past it, the cache
// starts again empty.
const maxMakers = 256

// handlerMaker is prog's wrapper function in this runtime, the function
// whose call declares the handler and returns it (compile.go), made on the
// runtime's first run of prog and kept. Each run calls it, so every
// declaration of the source is made anew in a scope of its own, as running
// the program each time did; the function itself and its prototype object —
// all that a handler could reach of it (arguments.callee) and that outlives
// a call — are frozen, so no run leaves anything on them for the next.
func (s *sandbox) handlerMaker(prog *Program) (goja.Callable, error) {
	if f, ok := s.makers[prog.prog]; ok {
		return f, nil
	}
	wrapper, err := s.rt.RunProgram(prog.prog)
	if err != nil {
		return nil, fmt.Errorf("run program: %w", err)
	}
	f, ok := goja.AssertFunction(wrapper)
	if !ok {
		return nil, invalid("the program does not define handler")
	}
	obj := wrapper.ToObject(s.rt)
	if _, err := s.freeze(goja.Undefined(), obj.Get("prototype")); err != nil {
		return nil, fmt.Errorf("freeze the handler maker's prototype: %w", err)
	}
	if _, err := s.freeze(goja.Undefined(), obj); err != nil {
		return nil, fmt.Errorf("freeze the handler maker: %w", err)
	}
	if s.makers == nil || len(s.makers) >= maxMakers {
		s.makers = make(map[*goja.Program]goja.Callable)
	}
	s.makers[prog.prog] = f
	return f, nil
}

// lockdownJS freezes every object reachable from the global object and from
// the intrinsics that only instances lead to, after turning the prototype
// properties that code commonly overrides on its own objects into accessors
// (assigning `e.name` or `o.toString` to an object whose prototype is frozen
// would fail otherwise: the "override mistake").
const lockdownJS = `(function (Set) {
	var getProto = Object.getPrototypeOf, freeze = Object.freeze, keys = Object.getOwnPropertyNames,
		syms = Object.getOwnPropertySymbols, desc = Object.getOwnPropertyDescriptor, define = Object.defineProperty;
	var tamed = ["constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty",
		"isPrototypeOf", "propertyIsEnumerable", "name", "message", "stack"];
	function tame(proto) {
		tamed.forEach(function (k) {
			var d = desc(proto, k);
			if (!d || !("value" in d) || !d.configurable) return;
			var value = d.value;
			define(proto, k, {
				get: function () { return value; },
				set: function (v) {
					if (this === proto) throw new TypeError("Cannot assign to read only property '" + k + "'");
					define(this, k, {value: v, writable: true, enumerable: true, configurable: true});
				},
				enumerable: d.enumerable, configurable: false
			});
		});
	}
	var seen = new Set();
	function walk(o) {
		if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) return;
		seen.add(o);
		walk(getProto(o));
		keys(o).forEach(function (k) { visit(desc(o, k)); });
		syms(o).forEach(function (k) { visit(desc(o, k)); });
	}
	function visit(d) {
		if (!d) return;
		if ("value" in d) walk(d.value); else { walk(d.get); walk(d.set); }
	}
	var g = (0, function () { return this; })();
	walk(g);
	[[][Symbol.iterator](), ""[Symbol.iterator](), /a/[Symbol.matchAll](""), function* () {}, async function () {},
	 (function () { return arguments; })(), new Error(), new Date(0), /a/, Object("")]
		.forEach(walk);
	[Object.prototype, Error.prototype, TypeError.prototype, RangeError.prototype, SyntaxError.prototype,
	 ReferenceError.prototype, EvalError.prototype, URIError.prototype, getProto(function () {}), Array.prototype,
	 String.prototype, Number.prototype, Boolean.prototype, Date.prototype, RegExp.prototype].forEach(tame);
	seen.forEach(function (o) { freeze(o); });
})`

// call calls a built-in and rethrows what it threw, so the exception (or an
// interrupt) travels on through the VM.
func call(f goja.Callable, this goja.Value, args ...goja.Value) goja.Value { //nolint:ireturn // goja values are an interface
	v, err := f(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

// throwRange throws a RangeError with msg.
func (s *sandbox) throwRangef(format string, args ...any) {
	obj, err := s.rt.New(s.rangeError, s.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
	}
	panic(obj)
}

// lengthOf is an array-like's length (a string's in UTF-16 units).
func (s *sandbox) lengthOf(v goja.Value) int64 {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return 0
	}
	if str, ok := v.(goja.String); ok {
		return int64(str.Length())
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		return 0
	}
	if obj.ClassName() == "String" {
		if str, ok := obj.Export().(string); ok {
			return int64(len(str))
		}
	}
	l := obj.Get("length")
	if l == nil {
		return 0
	}
	return l.ToInteger()
}

func (s *sandbox) checkLen(what string, v goja.Value) {
	if n := s.lengthOf(v); n > s.maxLen {
		s.throwRangef("%s: length %d is more than the %d a transformation may use", what, n, s.maxLen)
	}
}

// budget counts the bytes a guarded built-in is building.
type budget struct {
	s        *sandbox
	used     int64
	max      int64
	what     string
	exceeded bool
}

func (b *budget) add(n int64) {
	b.used += n
	if b.used > b.max {
		b.exceeded = true
		b.s.throwRangef("%s: the result would be more than %d bytes", b.what, b.max)
	}
}

// guard replaces the built-ins that loop or allocate as much as the script
// asks in one Go call (goja's interrupt does not reach into them).
func (s *sandbox) guard() error {
	rt := s.rt
	get := func(path string) (*goja.Object, goja.Callable, error) {
		v, err := rt.RunString(path)
		if err != nil {
			return nil, nil, fmt.Errorf("guard %s: %w", path, err)
		}
		f, ok := goja.AssertFunction(v)
		if !ok {
			return nil, nil, fmt.Errorf("guard %s: not a function", path)
		}
		return v.ToObject(rt), f, nil
	}
	set := func(obj *goja.Object, name string, f func(goja.FunctionCall) goja.Value) error {
		if err := obj.DefineDataProperty(name, rt.ToValue(f), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return fmt.Errorf("guard %s: %w", name, err)
		}
		return nil
	}

	// Array.prototype: every method walks this.length in Go.
	arrayProto := rt.Get("Array").ToObject(rt).Get("prototype").ToObject(rt)
	for _, name := range []string{"flat", "flatMap"} {
		if err := arrayProto.Delete(name); err != nil {
			return fmt.Errorf("guard delete %s: %w", name, err)
		}
	}
	for _, name := range arrayProto.GetOwnPropertyNames() {
		if name == "constructor" || name == "join" || name == "toString" || name == "toLocaleString" {
			continue
		}
		orig, ok := goja.AssertFunction(arrayProto.Get(name))
		if !ok {
			continue
		}
		what := "Array.prototype." + name
		if name == "concat" {
			if err := set(arrayProto, name, func(c goja.FunctionCall) goja.Value {
				total := s.lengthOf(c.This)
				for _, a := range c.Arguments {
					total += max(s.lengthOf(a), 1)
				}
				if total > s.maxLen {
					s.throwRangef("%s: length %d is more than the %d a transformation may use", what, total, s.maxLen)
				}
				return call(orig, c.This, c.Arguments...)
			}); err != nil {
				return err
			}
			continue
		}
		if err := set(arrayProto, name, func(c goja.FunctionCall) goja.Value {
			s.checkLen(what, c.This)
			return call(orig, c.This, c.Arguments...)
		}); err != nil {
			return err
		}
	}
	values := arrayProto.Get("values")
	if err := arrayProto.DefineDataPropertySymbol(goja.SymIterator, values, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return fmt.Errorf("guard Array.prototype[Symbol.iterator]: %w", err)
	}
	join := func(c goja.FunctionCall) goja.Value { return s.join(c.This, c.Argument(0)) }
	if err := set(arrayProto, "join", join); err != nil {
		return err
	}
	if err := set(arrayProto, "toString", func(c goja.FunctionCall) goja.Value { return s.join(c.This, goja.Undefined()) }); err != nil {
		return err
	}
	if err := set(arrayProto, "toLocaleString", func(c goja.FunctionCall) goja.Value { return s.join(c.This, goja.Undefined()) }); err != nil {
		return err
	}

	arrayCtor := rt.Get("Array").ToObject(rt)
	_, from, err := get("Array.from")
	if err != nil {
		return err
	}
	if err := set(arrayCtor, "from", func(c goja.FunctionCall) goja.Value {
		s.checkLen("Array.from", c.Argument(0))
		return call(from, c.This, c.Arguments...)
	}); err != nil {
		return err
	}

	_, apply, err := get("Function.prototype.apply")
	if err != nil {
		return err
	}
	fnProto := rt.Get("Function").ToObject(rt).Get("prototype").ToObject(rt)
	if err := set(fnProto, "apply", func(c goja.FunctionCall) goja.Value {
		s.checkLen("Function.prototype.apply", c.Argument(1))
		return call(apply, c.This, c.Arguments...)
	}); err != nil {
		return err
	}

	// What a lazy payload object cannot do (lazy.go): the run stops, to run
	// again on a plain input.
	objectCtor := rt.Get("Object").ToObject(rt)
	for _, name := range []string{"freeze", "seal", "preventExtensions", "defineProperty", "defineProperties"} {
		_, orig, err := get("Object." + name)
		if err != nil {
			return err
		}
		if err := set(objectCtor, name, func(c goja.FunctionCall) goja.Value {
			if isDynamicInput(c.Argument(0)) {
				rt.Interrupt(kindWhole) // dynamicObjectError tells the engine
				return c.Argument(0)
			}
			return call(orig, c.This, c.Arguments...)
		}); err != nil {
			return err
		}
	}

	if err := s.guardString(get, set); err != nil {
		return err
	}
	return s.guardJSON(get, set)
}

// join is Array.prototype.join with a byte budget and a nesting bound.
func (s *sandbox) join(this, sepArg goja.Value) goja.Value { //nolint:ireturn // goja values are an interface
	o := this.ToObject(s.rt)
	s.checkLen("Array.prototype.join", o)
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxNesting {
		s.throwRangef("Array.prototype.join: arrays nest more than %d levels", maxNesting)
	}
	sep := ","
	if sepArg != nil && !goja.IsUndefined(sepArg) {
		sep = sepArg.String()
	}
	n := s.lengthOf(o)
	b := budget{s: s, max: s.maxStr, what: "Array.prototype.join"}
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			b.add(int64(len(sep)))
			sb.WriteString(sep)
		}
		v := o.Get(strconv.FormatInt(i, 10))
		if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
			continue
		}
		str := v.String()
		b.add(int64(len(str)))
		sb.WriteString(str)
	}
	return s.rt.ToValue(sb.String())
}
