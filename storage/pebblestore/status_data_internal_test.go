package pebblestore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/stream"
)

// fullStatusData is a stream.Data with every field set to a distinct value,
// reached by reflection: a field added to stream.Data later fails
// TestStatusDataRoundTripsEveryField until appendStatusData writes it.
func fullStatusData(t *testing.T) stream.Data {
	t.Helper()
	var d stream.Data
	n := 0
	for sf, f := range reflect.ValueOf(&d).Elem().Fields() {
		n++
		switch v := f.Addr().Interface().(type) {
		case *string:
			*v = fmt.Sprintf("s%d-é\x00", n)
		case *[]string:
			*v = []string{fmt.Sprint("a", n), fmt.Sprint("b", n)}
		case *int:
			*v = n * 1_000_003
		case *int64:
			*v = int64(n) * 1_000_000_007
		case **int64:
			c := int64(n) * 1_000_000_009
			*v = &c
		case **time.Time:
			at := time.Date(2026, 11, 28, 6, 0, n, n*1_000_000, time.UTC)
			*v = &at
		default:
			t.Fatalf("fullStatusData: no value for %s (%s): teach the test and appendStatusData", sf.Name, sf.Type)
		}
		require.False(t, f.IsZero(), sf.Name)
	}
	return d
}

func TestStatusDataRoundTripsEveryField(t *testing.T) {
	t.Parallel()
	for _, d := range []stream.Data{fullStatusData(t), {}, {Subscriptions: []string{}}} {
		var got stream.Data
		require.NoError(t, parseStatusData(appendStatusData(nil, &d), &got))
		require.Equal(t, d, got)
	}
}

// TestStatusDataReadsTheJSONForm: a status event stored before the binary
// form (its data a JSON object) reads as it did.
func TestStatusDataReadsTheJSONForm(t *testing.T) {
	t.Parallel()
	d := fullStatusData(t)
	doc, err := json.Marshal(d)
	require.NoError(t, err)
	var got stream.Data
	require.NoError(t, parseStatusData(doc, &got))
	require.Equal(t, d, got)
}

// TestStatusDataRefusesDamagedInput: truncations, changed bytes and
// trailing bytes fail or decode, never panic.
func TestStatusDataRefusesDamagedInput(t *testing.T) {
	t.Parallel()
	d := fullStatusData(t)
	b := appendStatusData(nil, &d)
	for n := 1; n < len(b); n++ {
		var got stream.Data
		require.Error(t, parseStatusData(b[:n], &got), "truncated to %d bytes", n)
	}
	var got stream.Data
	require.ErrorIs(t, parseStatusData(append(append([]byte(nil), b...), 0), &got), errCorrupt)
	for i := 1; i < len(b); i++ {
		for _, x := range []byte{0x00, 0x7f, 0x80, 0xff} {
			garbled := append([]byte(nil), b...)
			garbled[i] = x
			var got stream.Data
			_ = parseStatusData(garbled, &got)
		}
	}
}
