package binform_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/store/binform"
)

func written() []byte {
	w := binform.Writer{}
	w.Uvarint(0)
	w.Uvarint(math.MaxUint64)
	w.Varint(-1)
	w.Varint(math.MinInt64)
	w.Varint(math.MaxInt64)
	w.Str("")
	w.Str("héllo")
	w.Bytes([]byte{0, 1, 2})
	w.Bool(true)
	w.Bool(false)
	return w.B
}

func TestReaderReadsWhatWriterWrote(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, uv func() uint64, v func() int64, s func() string, b func() bool, left func() int, err func() error) {
		t.Helper()
		require.Equal(t, uint64(0), uv())
		require.Equal(t, uint64(math.MaxUint64), uv())
		require.Equal(t, int64(-1), v())
		require.Equal(t, int64(math.MinInt64), v())
		require.Equal(t, int64(math.MaxInt64), v())
		require.Empty(t, s())
		require.Equal(t, "héllo", s())
		require.Equal(t, "\x00\x01\x02", s())
		require.True(t, b())
		require.False(t, b())
		require.Zero(t, left())
		require.NoError(t, err())
	}
	t.Run("string", func(t *testing.T) {
		t.Parallel()
		r := binform.NewReader(string(written()))
		check(t, r.Uvarint, r.Varint, r.Str, r.Bool, r.Len, r.Err)
	})
	t.Run("bytes", func(t *testing.T) {
		t.Parallel()
		r := binform.NewReader(written())
		check(t, r.Uvarint, r.Varint, func() string { return string(r.Str()) }, r.Bool, r.Len, r.Err)
	})
}

// The byte-level rules are encoding/binary's: the same bytes decode to the
// same values, and the bytes binary.Uvarint refuses are refused.
func TestUvarintAgreesWithEncodingBinary(t *testing.T) {
	t.Parallel()
	cases := [][]byte{
		{},
		{0x80},
		{0x7f},
		{0xff, 0x01},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02},       // overflows 64 bits
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // eleven bytes
	}
	for _, c := range cases {
		want, n := binary.Uvarint(c)
		r := binform.NewReader(c)
		got := r.Uvarint()
		if n <= 0 {
			require.ErrorIs(t, r.Err(), binform.ErrFormat, "% x", c)
			continue
		}
		require.NoError(t, r.Err(), "% x", c)
		require.Equal(t, want, got, "% x", c)
		require.Equal(t, len(c)-n, r.Len(), "% x", c)
	}
}

func TestFirstFailureSticks(t *testing.T) {
	t.Parallel()
	w := binform.Writer{}
	w.Str("abc")
	r := binform.NewReader(string(w.B[:2])) // cut inside the string
	require.Empty(t, r.Str())
	require.ErrorIs(t, r.Err(), binform.ErrFormat)
	require.ErrorContains(t, r.Err(), "bad string")
	require.Zero(t, r.Uvarint())
	require.Zero(t, r.Len())
	require.ErrorContains(t, r.Err(), "bad string") // still the first

	bad := binform.NewReader([]byte{2})
	require.False(t, bad.Bool())
	require.ErrorContains(t, bad.Err(), "bad bool")

	huge := binform.Writer{}
	huge.Uvarint(math.MaxUint64) // a length far past the input
	r2 := binform.NewReader(huge.B)
	require.Nil(t, r2.Str())
	require.ErrorIs(t, r2.Err(), binform.ErrFormat)
}

func FuzzReaderNeverPanics(f *testing.F) {
	f.Add(written())
	f.Add([]byte{0xff})
	f.Fuzz(func(_ *testing.T, b []byte) {
		r := binform.NewReader(b)
		for r.Len() > 0 && r.Err() == nil {
			_ = r.Str()
			_ = r.Varint()
			_ = r.Bool()
		}
	})
}
