package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0},
		{"1.10", "1.9", 1},
		{"1.9", "1.10", -1},
		{"2.0", "1.99", 1},
		{"10.0", "9.9", 1},
		{"0.1", "0.0", 1},
	} {
		require.Equal(t, tc.want, CompareVersions(tc.a, tc.b), "%s vs %s", tc.a, tc.b)
	}
}

func TestResolveVersion(t *testing.T) {
	t.Parallel()
	v := func(version string, status VersionStatus) Version { return Version{Version: version, Status: status} }
	for _, tc := range []struct {
		name      string
		versions  []Version
		requested string
		want      string // "" with wantPtr "" means no version (any data)
		wantPtr   string // pointer of the rejection, "" when accepted
	}{
		{name: "no versions takes any data", versions: nil},
		{name: "no versions ignores dataversion", versions: nil, requested: "3.0"},
		{name: "newest CURRENT when absent", versions: []Version{v("1.0", VersionCurrent), v("1.2", VersionCurrent), v("1.1", VersionCurrent)}, want: "1.2"},
		{name: "numeric compare 1.10 > 1.9", versions: []Version{v("1.9", VersionCurrent), v("1.10", VersionCurrent)}, want: "1.10"},
		{name: "major beats minor", versions: []Version{v("2.0", VersionCurrent), v("1.15", VersionCurrent)}, want: "2.0"},
		{name: "FINALISING skipped when absent", versions: []Version{v("1.0", VersionCurrent), v("2.0", VersionFinalising)}, want: "1.0"},
		{name: "DEPRECATED skipped when absent", versions: []Version{v("1.0", VersionCurrent), v("0.9", VersionDeprecated), v("3.0", VersionDeprecated)}, want: "1.0"},
		{name: "FINALISING when named", versions: []Version{v("1.0", VersionCurrent), v("2.0", VersionFinalising)}, requested: "2.0", want: "2.0"},
		{name: "DEPRECATED when named", versions: []Version{v("1.0", VersionCurrent), v("0.9", VersionDeprecated)}, requested: "0.9", want: "0.9"},
		{name: "older CURRENT when named", versions: []Version{v("1.0", VersionCurrent), v("1.1", VersionCurrent)}, requested: "1.0", want: "1.0"},
		{name: "unknown named", versions: []Version{v("1.0", VersionCurrent)}, requested: "1.5", wantPtr: "/dataversion"},
		{name: "named must match exactly", versions: []Version{v("1.0", VersionCurrent)}, requested: "1", wantPtr: "/dataversion"},
		{name: "all FINALISING needs dataversion", versions: []Version{v("1.0", VersionFinalising)}, wantPtr: "/dataversion"},
		{name: "all DEPRECATED needs dataversion", versions: []Version{v("1.0", VersionDeprecated)}, wantPtr: "/dataversion"},
		{name: "FINALISING and DEPRECATED need dataversion", versions: []Version{v("1.0", VersionDeprecated), v("2.0", VersionFinalising)}, wantPtr: "/dataversion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, rej := resolveVersion(&EventType{Code: "a.b", Versions: tc.versions}, tc.requested)
			if tc.wantPtr != "" {
				require.Nil(t, got)
				require.NotNil(t, rej)
				require.Len(t, rej.Violations, 1)
				require.Equal(t, tc.wantPtr, rej.Violations[0].Pointer)
				require.NotEmpty(t, rej.Detail)
				return
			}
			require.Nil(t, rej)
			if tc.want == "" {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tc.want, got.Version)
		})
	}
}
