// Package transform runs a subscription's transformation (API.md §16): a
// JavaScript function handler(webhook) that reshapes a delivery before its
// request is built. The package is a leaf: it sees the standard library and
// the JavaScript engine only, so the router, the API and the dashboard's test
// endpoint share one implementation of the contract.
//
// # Use
//
// [Compile] parses and checks a source once (a syntax error, no top-level
// handler or a source over [MaxSourceBytes] is a [*CompileError] with the line
// and column); a [Cache] keeps compiled programs per subscription version so a
// delivery never parses again. An [Engine] runs a [*Program] on an [Input] and
// returns the validated [Output], or a [*RunError] whose [Kind] is one of a
// small fixed set (metric labels).
//
// # Engine
//
// The engine is github.com/dop251/goja: pure Go (no cgo, nothing to build or
// ship beside the binary), ECMAScript 5.1 with the ES2015 syntax the contract
// names (let/const, arrow functions, template literals), compiled programs
// that many runtimes share, and Runtime.Interrupt for the time limit. The
// alternative with a hard memory limit, QuickJS compiled to WebAssembly and
// run by wazero, is not served as a Go module here: it would mean building
// and committing a WebAssembly binary of a C engine. goja has no memory limit
// of its own, so this package builds one (below).
//
// # The input
//
// The handler's payload is built lazily (lazy.go): each JSON object is a goja
// dynamic object whose keys are read when it is made and whose values are
// built on first access, and each JSON array a goja dynamic array whose
// elements are built on first read (lazy_array.go), so a handler that reads a few fields of a large
// event builds those only. It behaves as JSON.parse's plain objects (key
// order, own data properties, the prototype); what a dynamic object cannot
// do (freeze, seal, preventExtensions, defineProperty, a Symbol key) runs the
// handler again on an input built whole, within the same time limit. An
// untouched payload object is sent as its input bytes without stringifying.
// The argument and its headers are dynamic objects too (arg.go), their
// members built from the Input on first read.
//
// # Isolation between runs
//
// Runtimes are pooled ([Config.PoolSize]); a runtime serves one run at a time.
// Each runtime is locked down once when it is made: every built-in reachable
// from the global object (prototypes, iterators, constructors and the global
// object itself) is frozen, so a run that tampers with Object.prototype or
// JSON.stringify, or assigns a global, changes nothing (in strict code the
// assignment throws). The program runs inside a fresh function scope per run
// (the source is compiled as the body of a wrapper function that returns
// handler), so its top-level variables start anew each run; the
// wrapper function is made once per runtime and frozen with its prototype
// object, so nothing a run sets on it reaches the next. The properties
// that ordinary code overrides on its own objects (toString, valueOf,
// constructor, name, message, …) are accessors on the frozen prototypes that
// define the property on the object assigned to, so freezing does not break
// `err.name = "X"`. A fresh runtime per run isolates just as well but costs
// far more (BenchmarkRun/fresh against BenchmarkRun/pooled).
//
// # Sandbox
//
// The global object holds the ECMAScript built-ins minus everything that is
// not in the contract and could be abused: no eval, Function constructor,
// BigInt, Proxy, Reflect, Promise, Map/Set/WeakMap/WeakSet, typed arrays,
// ArrayBuffer or DataView. goja itself has no I/O, timers, require, console or
// environment; nothing is added.
//
// # Time
//
// A run is interrupted at [Config.Timeout] of its own CPU time and when its
// ctx ends. The run's goroutine keeps one OS thread (runtime.LockOSThread)
// and the watchdog reads that thread's CPU clock (Linux; elsewhere the limit
// is wall time), so a run the scheduler holds off the CPU on a saturated
// machine is not failed for the wait: an endless loop is stopped after
// Timeout of CPU, a good handler is not stopped because other processes or
// goroutines took the CPUs. Whatever its CPU time, a run is stopped after
// [Config.WallLimit] of wall time (ten times Timeout, at least Timeout plus
// five seconds), so a starved hostile run still frees its runtime. The time
// spent waiting for a runtime is not counted; ctx bounds it. goja checks the
// interrupt between instructions only, not inside a built-in written in Go,
// so the built-ins that loop or allocate as much as a script asks for in one
// call are guarded (next section). A run that still does not return within
// [AbandonGrace] after its interrupt is abandoned: Run returns a timeout, and
// the runtime is never reused.
//
// # Memory
//
// goja has no per-runtime memory limit, and a Go heap cannot be split by
// goroutine, so the bound is built in three layers:
//
//  1. A watchdog samples the process's cumulative heap allocation
//     (runtime/metrics /gc/heap/allocs:bytes) every [WatchdogInterval] while
//     any run is active and interrupts each run during whose lifetime the
//     process allocated more than [Config.MaxMemory] (default 64 MiB). A run
//     that was alone fails with [KindMemory]. A run that shared the process
//     with other runs cannot be told from them, so it is run once more
//     alone, holding every slot (the others finish first, new ones wait),
//     and fails with KindMemory only if it passes the bound then: beside an
//     allocation hog a good handler is stopped at most once and succeeds on
//     its second run, while the hog fails (TestRunMemoryStopsTheAllocator).
//     Handlers have no I/O, so running one twice is not observable. The
//     count includes what the rest of the process allocated meanwhile, so a
//     run alone is stopped wrongly only if the gateway allocates MaxMemory
//     while it runs (64 MiB within a 100 ms run is 640 MB/s; ordinary runs
//     take well under a millisecond).
//  2. The built-ins that would allocate or loop without end inside one Go
//     call are guarded and throw a RangeError instead: an array-like's length
//     is at most MaxMemory/256 elements (262,144 by default) for every
//     Array.prototype method, Array.from, Function.prototype.apply, split and
//     spreading an array or a string; the strings that repeat, padStart,
//     padEnd, concat, join, replace, replaceAll and JSON.stringify build are
//     at most MaxMemory/16 bytes (4 MiB), counted as they grow, so one value
//     referenced a million times cannot multiply; JSON.parse and
//     JSON.stringify nest at most 1,000 levels and the call stack 1,000
//     frames (both recurse on the Go stack). flat, flatMap and String.raw are
//     removed; BigInt literals are refused at compile time.
//  3. At most [Config.PoolSize] runs are active at once.
//
// So a run holds at most MaxMemory, plus one guarded built-in's result, plus
// what it allocates in one watchdog interval; TestRunMemory measures six
// endless-allocation handlers stopped with 26–66 MiB of heap growth under the
// 64 MiB bound. The engine's share of the process is PoolSize times that
// (about 4 × 70 MiB with the defaults), plus the garbage the collector has
// not yet reclaimed.
package transform
