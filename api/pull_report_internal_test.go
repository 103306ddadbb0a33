package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       reportInput
		status   int      // 0 when valid
		pointers []string // of the problem's errors
	}{
		{"valid", reportInput{WorkerID: "host:42", ExecutionTimeMs: 12, StatusCode: 200}, 0, nil},
		{"no status code", reportInput{WorkerID: "w", ExecutionTimeMs: 0}, 0, nil},
		{"a day of execution", reportInput{WorkerID: "w", ExecutionTimeMs: executionTimeMaxMs}, 0, nil},
		{"status code bounds", reportInput{WorkerID: "w", StatusCode: 599}, 0, nil},
		{"missing worker", reportInput{ExecutionTimeMs: 1}, http.StatusBadRequest, []string{"/workerId"}},
		{"blank worker", reportInput{WorkerID: "  "}, http.StatusBadRequest, []string{"/workerId"}},
		{"negative status code", reportInput{WorkerID: "w", StatusCode: -1}, http.StatusUnprocessableEntity, []string{"/statusCode"}},
		{"status code below 100", reportInput{WorkerID: "w", StatusCode: 99}, http.StatusUnprocessableEntity, []string{"/statusCode"}},
		{"status code above 599", reportInput{WorkerID: "w", StatusCode: 600}, http.StatusUnprocessableEntity, []string{"/statusCode"}},
		{"negative execution time", reportInput{WorkerID: "w", ExecutionTimeMs: -1}, http.StatusUnprocessableEntity, []string{"/executionTimeMs"}},
		{"absurd execution time", reportInput{WorkerID: "w", ExecutionTimeMs: 1 << 62}, http.StatusUnprocessableEntity, []string{"/executionTimeMs"}},
		{"worker id too long", reportInput{WorkerID: strings.Repeat("w", workerIDMaxLength+1)}, http.StatusUnprocessableEntity, []string{"/workerId"}},
		{"worker id with a newline", reportInput{WorkerID: "host\n:1"}, http.StatusUnprocessableEntity, []string{"/workerId"}},
		{
			"every field at fault",
			reportInput{WorkerID: "\x00", ExecutionTimeMs: -5, StatusCode: 1000},
			http.StatusUnprocessableEntity,
			[]string{"/workerId", "/executionTimeMs", "/statusCode"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			err := checkReport(&in)
			if tt.status == 0 {
				require.NoError(t, err)
				return
			}
			p, ok := err.(*Problem) //nolint:errorlint // our own value
			require.True(t, ok, "%T %v", err, err)
			require.Equal(t, tt.status, p.Status)
			var ptrs []string
			for _, e := range p.Errors {
				ptrs = append(ptrs, e.Pointer)
			}
			require.Equal(t, tt.pointers, ptrs)
		})
	}
}

func TestCheckReportTruncatesErrorMessage(t *testing.T) {
	t.Parallel()
	in := reportInput{WorkerID: "w", ErrorMessage: strings.Repeat("é", errorMessageMaxBytes)} // 2 bytes each
	require.NoError(t, checkReport(&in))
	require.Len(t, in.ErrorMessage, errorMessageMaxBytes)
	require.True(t, strings.HasPrefix(strings.Repeat("é", errorMessageMaxBytes), in.ErrorMessage))

	in = reportInput{WorkerID: "w", ErrorMessage: "x" + strings.Repeat("é", errorMessageMaxBytes)}
	require.NoError(t, checkReport(&in))
	require.Len(t, in.ErrorMessage, errorMessageMaxBytes-1, "a character is not split")

	in = reportInput{WorkerID: "w", ErrorMessage: "short"}
	require.NoError(t, checkReport(&in))
	require.Equal(t, "short", in.ErrorMessage)
}

func TestCheckWorkerIDOfTheClaimQuery(t *testing.T) {
	t.Parallel()
	require.Nil(t, checkWorkerID("host:1", "worker_id"))
	p := checkWorkerID("", "worker_id")
	require.Equal(t, http.StatusBadRequest, p.Status)
	require.Equal(t, "worker_id is required", p.Detail)
	require.Empty(t, p.Errors, "a query parameter has no body pointer")
	p = checkWorkerID(strings.Repeat("w", 300), "worker_id")
	require.Equal(t, http.StatusUnprocessableEntity, p.Status)
}
