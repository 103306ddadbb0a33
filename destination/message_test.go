package destination_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/destination"
)

func TestNewMessage(t *testing.T) {
	t.Parallel()
	kafkaLike := destination.Binding{Binary: true, AttrPrefix: "ce_", ContentTypeHeader: "content-type", JobIDHeader: destination.HeaderJobID}
	amqpLike := destination.Binding{Binary: true, AttrPrefix: "cloudEvents:"}
	const ev = `{"specversion":"1.0","id":"e1","source":"/s","type":"t","time":"2026-01-24T14:00:00.123Z","traceparent":"00-aa-bb-01","tracestate":"k=v","n":7,"flag":true,"datacontenttype":"application/json","data":{"a":1}}`
	tests := []struct {
		name     string
		binding  destination.Binding
		event    string
		dataOnly bool
		headers  map[string]string
		trace    string
		wantBody string
		wantCT   string
		want     map[string]string
		absent   []string
	}{
		{
			name: "structured", binding: kafkaLike, event: ev,
			headers:  map[string]string{"X-Team": "orders", "Content-Type": "text/plain", "hooklane-attempt": "99"},
			wantBody: ev, wantCT: "application/cloudevents+json",
			want: map[string]string{
				"content-type": "application/cloudevents+json", "hooklane-job-id": "job-1", "hooklane-attempt": "2",
				"X-Team": "orders", "traceparent": "00-aa-bb-01", "tracestate": "k=v",
			},
			absent: []string{"Content-Type", "ce_id"},
		},
		{
			name: "binary", binding: kafkaLike, event: ev, dataOnly: true, trace: "00-cc-dd-01",
			wantBody: `{"a":1}`, wantCT: "application/json",
			want: map[string]string{
				"ce_id": "e1", "ce_specversion": "1.0", "ce_time": "2026-01-24T14:00:00.123Z", "ce_n": "7", "ce_flag": "true",
				"ce_traceparent": "00-aa-bb-01", "traceparent": "00-cc-dd-01", "content-type": "application/json",
			},
			absent: []string{"ce_data", "ce_datacontenttype"},
		},
		{
			name: "binary, amqp names, no content type header", binding: amqpLike, event: ev, dataOnly: true,
			wantBody: `{"a":1}`, wantCT: "application/json",
			want:   map[string]string{"cloudEvents:id": "e1", "hooklane-attempt": "2"},
			absent: []string{"content-type", "hooklane-job-id"},
		},
		{
			name: "binary text data is the text", binding: kafkaLike, dataOnly: true,
			event:    `{"specversion":"1.0","id":"e2","source":"/s","type":"t","datacontenttype":"text/plain","data":"héllo"}`,
			wantBody: "héllo", wantCT: "text/plain",
		},
		{
			name: "binary base64 data is decoded", binding: kafkaLike, dataOnly: true,
			event:    `{"specversion":"1.0","id":"e3","source":"/s","type":"t","datacontenttype":"application/octet-stream","data_base64":"AAEC"}`,
			wantBody: "\x00\x01\x02", wantCT: "application/octet-stream",
			absent: []string{"ce_data_base64"},
		},
		{
			name: "structured only binding ignores dataOnly", binding: destination.Binding{JobIDHeader: destination.HeaderJobID}, event: ev, dataOnly: true,
			wantBody: ev, wantCT: "application/cloudevents+json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := destination.NewMessage(tt.binding, &destination.Envelope{
				Event: []byte(tt.event), DataOnly: tt.dataOnly, Headers: tt.headers,
				JobID: "job-1", Attempt: 2, Group: "sub:g", TraceParent: tt.trace,
			})
			require.NoError(t, err)
			require.Equal(t, tt.wantBody, string(m.Body))
			require.Equal(t, tt.wantCT, m.ContentType)
			require.Equal(t, "sub:g", m.Key)
			require.Equal(t, "job-1", m.JobID)
			for k, v := range tt.want {
				require.Equal(t, v, m.Headers[k], k)
			}
			for _, k := range tt.absent {
				require.NotContains(t, m.Headers, k)
			}
		})
	}
	_, err := destination.NewMessage(kafkaLike, &destination.Envelope{Event: []byte(`[1]`)})
	require.Error(t, err)
}
