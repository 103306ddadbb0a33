package queue_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/queue"
)

func TestCheckAttributes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		attrs   map[string]string
		wantErr bool
	}{
		{"nil", nil, false},
		{"trace context", map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=b"}, false},
		{"dots inside", map[string]string{"a.b-c_d": "x"}, false},
		{"longest name", map[string]string{strings.Repeat("n", queue.MaxAttributeNameLen): "x"}, false},
		{"name too long", map[string]string{strings.Repeat("n", queue.MaxAttributeNameLen+1): "x"}, true},
		{"empty name", map[string]string{"": "x"}, true},
		{"leading dot", map[string]string{".a": "x"}, true},
		{"trailing dot", map[string]string{"a.": "x"}, true},
		{"double dot", map[string]string{"a..b": "x"}, true},
		{"reserved hooklane", map[string]string{"HOOKLANE.x": "x"}, true},
		{"reserved amazon", map[string]string{"Amazon.x": "x"}, true},
		{"slash", map[string]string{"a/b": "x"}, true},
		{"empty value", map[string]string{"a": ""}, true},
		{"invalid utf8", map[string]string{"a": "\xff"}, true},
		{"newline", map[string]string{"a": "x\ny"}, true},
		{"longest value", map[string]string{"a": strings.Repeat("v", queue.MaxAttributeValueLen)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := queue.CheckAttributes(tt.attrs)
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
		})
	}
}
