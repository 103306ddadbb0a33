// Package storespike is the measured spike of issue 30: which data plane
// carries the events, jobs and status history of the embedded gateway at
// the least CPU per delivered event with every write fsynced.
//
// It is a spike, not a store: nothing in the product imports it and it
// exports nothing. Its code lives in _test.go files only — the benchmarks
// and the small prototypes they need — so that no build of the gateway
// ever links it:
//
//   - writes_test.go counts the durable writes of one delivered event on
//     today's embedded default (the real pipeline: ingest, the router's
//     claim, the outcome) and the b-trees each of its statements opens;
//   - spike_test.go drives the write pattern one delivered event costs
//     (ingest an event with its dedup key, its job and status events;
//     claim; record the outcome) from C concurrent writers against three
//     stores: today's sqlitestore through its real methods, SQLite
//     reshaped (reshaped_test.go) and Pebble (pebble_test.go).
//
// Run the comparison with
//
//	go test -run '^$' -bench BenchmarkDeliveredEvent -benchtime 2000x ./storage/storespike/
//
// and read BENCHMARKS.md ("Issue 30: the spike") for the figures.
package storespike
