package dispatch_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/dispatch"
)

// fillEvery sets every field reachable from v (exported or not, through
// pointers, slices and maps) to a value that is not zero and differs from
// the others, so that a codec dropping or swapping any field is caught.
// Times get nanoseconds below the millisecond.
func fillEvery(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d-é\x00", *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n) * 1_000_003)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEvery(t, v.Elem(), n)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillEvery(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillEvery(t, k, n)
			fillEvery(t, e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 28, 6, 0, *n, *n*1_000_117, time.UTC)))
			return
		}
		for _, f := range v.Fields() {
			fillEvery(t, f, n)
		}
	default:
		// uint8 only inside []byte, which the slice case fills element by
		// element.
		if v.Kind() == reflect.Uint8 {
			v.SetUint(uint64(*n % 256)) //nolint:gosec // G115: below 256
			return
		}
		t.Fatalf("fillEvery: no value for a %s: teach the test (and the codec) the new field's type", v.Type())
	}
}

// requireNoZero fails when a field reachable from v is zero: fillEvery
// reached them all.
func requireNoZero(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	require.False(t, v.IsZero(), "%s is zero", path)
	switch v.Kind() {
	case reflect.Pointer:
		requireNoZero(t, v.Elem(), path)
	case reflect.Slice:
		for i := range v.Len() {
			requireNoZero(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for sf, f := range v.Fields() {
			requireNoZero(t, f, path+"."+sf.Name)
		}
	default:
	}
}

// fullJob is a job with every field set (see fillEvery).
func fullJob(t *testing.T) *dispatch.Job {
	t.Helper()
	j := &dispatch.Job{}
	n := 0
	fillEvery(t, reflect.ValueOf(j).Elem(), &n)
	requireNoZero(t, reflect.ValueOf(j).Elem(), "Job")
	return j
}

// TestJobBinaryRoundTripsEveryField: every field of a job, reached by
// reflection (a field added to Job later fails here until the codec writes
// it), comes back as it went in, times to the nanosecond.
func TestJobBinaryRoundTripsEveryField(t *testing.T) {
	t.Parallel()
	j := fullJob(t)
	b := dispatch.AppendJobBinary([]byte("prefix"), j)
	require.Equal(t, "prefix", string(b[:6]), "appends")
	got, err := dispatch.ParseJobBinary(b[6:])
	require.NoError(t, err)
	require.Equal(t, j, got)

	// The job shares no memory with the bytes it was read from.
	clear(b)
	require.Equal(t, j, got)
}

// TestJobBinaryKeepsNilApartFromEmpty: nil and empty slices and maps, nil
// pointers and zero times come back as they were.
func TestJobBinaryKeepsNilApartFromEmpty(t *testing.T) {
	t.Parallel()
	for _, j := range []*dispatch.Job{
		{},
		{Headers: map[string]string{}, Payload: []byte{}, Attempts: []dispatch.Attempt{}, LastError: new(string)},
		{ID: "01JOB", CreatedAt: time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC), Version: -1},
	} {
		got, err := dispatch.ParseJobBinary(dispatch.AppendJobBinary(nil, j))
		require.NoError(t, err)
		require.Equal(t, j, got)
	}
}

// TestJobBinaryTimesComeBackInUTC: a time in another zone is the same
// instant in UTC, as the stores keep them.
func TestJobBinaryTimesComeBackInUTC(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 8, 0, 0, 5, time.FixedZone("X", 2*3600))
	got, err := dispatch.ParseJobBinary(dispatch.AppendJobBinary(nil, &dispatch.Job{CreatedAt: at}))
	require.NoError(t, err)
	require.Equal(t, at.UTC(), got.CreatedAt)
}

// TestJobBinaryRefusesDamagedInput: every truncation of a full job's form,
// every single-byte change of it and trailing bytes return ErrJobBinary
// or a job — never a panic; a length beyond the bytes left fails before
// anything is allocated for it.
func TestJobBinaryRefusesDamagedInput(t *testing.T) {
	t.Parallel()
	b := dispatch.AppendJobBinary(nil, fullJob(t))
	for n := range b {
		_, err := dispatch.ParseJobBinary(b[:n])
		require.ErrorIs(t, err, dispatch.ErrJobBinary, "truncated to %d bytes", n)
	}
	_, err := dispatch.ParseJobBinary(append(append([]byte(nil), b...), 0))
	require.ErrorIs(t, err, dispatch.ErrJobBinary, "a trailing byte")
	for i := range b {
		for _, x := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff} {
			garbled := append([]byte(nil), b...)
			garbled[i] = x
			j, err := dispatch.ParseJobBinary(garbled)
			if err != nil {
				require.ErrorIs(t, err, dispatch.ErrJobBinary)
				continue
			}
			require.NotNil(t, j)
		}
	}
	_, err = dispatch.ParseJobBinary([]byte{2})
	require.ErrorIs(t, err, dispatch.ErrJobBinary, "an unknown version")
}

func FuzzParseJobBinary(f *testing.F) {
	f.Add(dispatch.AppendJobBinary(nil, &dispatch.Job{ID: "01JOB", Headers: map[string]string{"a": "b"}}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := dispatch.ParseJobBinary(b)
		if err != nil {
			require.ErrorIs(t, err, dispatch.ErrJobBinary)
			return
		}
		// What it read, it writes back the same (map order aside, which the
		// writer sorts).
		again, err := dispatch.ParseJobBinary(dispatch.AppendJobBinary(nil, j))
		require.NoError(t, err)
		require.Equal(t, j, again)
	})
}

// BenchmarkJobEncoding compares the binary form with the JSON document the
// stores kept before (Job's fields without its API rendering), a job as a
// delivery writes it: one attempt, a NEXT_ON_ERROR group.
func BenchmarkJobEncoding(b *testing.B) {
	j, _ := snapshotFixture()
	type plain dispatch.Job
	bin := dispatch.AppendJobBinary(nil, j)
	doc, err := json.Marshal((*plain)(j))
	require.NoError(b, err)
	b.Run("binary/append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = dispatch.AppendJobBinary(buf[:0], j)
		}
		b.ReportMetric(float64(len(bin)), "bytes")
	})
	b.Run("binary/parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dispatch.ParseJobBinary(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json/marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal((*plain)(j)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(doc)), "bytes")
	})
	b.Run("json/unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p plain
			if err := json.Unmarshal(doc, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
