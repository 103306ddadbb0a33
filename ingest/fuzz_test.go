package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/event/schema"
	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/storage/pipelinetest"
	"github.com/hooklane/hooklane/subscription"
)

// fuzzLimits are small, so the fuzzer reaches the size checks.
var fuzzLimits = ingest.Limits{MaxEventBytes: 4 << 10, MaxRequestBytes: 16 << 10, MaxBatch: 8} //nolint:gochecknoglobals // read-only test fixture

// fuzzContentTypes are the content types a fuzz input picks from by index;
// an index past the end uses the fuzzed content type string instead.
var fuzzContentTypes = []string{ //nolint:gochecknoglobals // read-only test fixture
	ingest.ContentTypeStructured,
	ingest.ContentTypeBatch,
	"application/json",
	"application/json; charset=utf-8",
	"text/plain",
	"application/octet-stream",
	"",
}

// fuzzRequest builds an ingest request from fuzz arguments: the content
// type (picked or fuzzed), optional binary-mode ce-* headers, and the body.
func fuzzRequest(t *testing.T, pick uint8, contentType string, binary bool, ceType, ceID, ceVersion, ceExt string, body []byte) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/events", bytes.NewReader(body))
	ct := contentType
	if int(pick) < len(fuzzContentTypes) {
		ct = fuzzContentTypes[pick]
	}
	if ct != "" {
		r.Header["Content-Type"] = []string{ct}
	}
	if binary {
		r.Header["Ce-Specversion"] = []string{"1.0"}
		r.Header["Ce-Id"] = []string{ceID}
		r.Header["Ce-Source"] = []string{"/fuzz"}
		r.Header["Ce-Type"] = []string{ceType}
		if ceVersion != "" {
			r.Header["Ce-Dataversion"] = []string{ceVersion}
		}
		if ceExt != "" {
			r.Header["Ce-"+ceExt] = []string{ceVersion}
		}
	}
	return r
}

// requireInputError fails unless err is nil or an *ingest.Error with a
// status that blames the input.
func requireInputError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ie *ingest.Error
	require.ErrorAs(t, err, &ie, "not an *ingest.Error: %T %v", err, err)
	require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity},
		ie.Status, "%v", ie)
	for _, v := range ie.Violations {
		require.True(t, v.Pointer == "" || v.Pointer[0] == '/', "pointer %q of %v", v.Pointer, ie)
	}
}

func addSeeds(f *testing.F) {
	f.Helper()
	seeds := []struct {
		pick                           uint8
		ct                             string
		binary                         bool
		ceType, ceID, ceVersion, ceExt string
		body                           string
	}{
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"1","source":"/s","type":"shop.order.created","data":{"amount":12,"currency":"EUR"}}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"2","source":"/s","type":"shop.order.created","dataversion":"1.1","data":{"amount":"x"}}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"3","source":"/s","type":"shop.order.created","dataversion":"0.9","data":{}}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"4","source":"/s","type":"shop.order.created","data_base64":"AAEC"}`},
		{0, "", false, "", "", "", "", `{"specversion":"0.3","id":"","source":"","type":7,"time":"not a time"}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"5","source":"/s","type":"shop.any","data":"text","region":"eu","n":1e400}`},
		{1, "", false, "", "", "", "", `[{"specversion":"1.0","id":"b1","source":"/s","type":"shop.order.created","data":{"amount":1,"currency":"USD","email":"a@b.c"}},{"specversion":"1.0","id":"b2","source":"/s","type":"shop.order.archived"}]`},
		{1, "", false, "", "", "", "", `[]`},
		{1, "", false, "", "", "", "", `[1,"x",null,{}]`},
		{2, "", true, "shop.order.created", "bin-1", "", "", `{"amount":99,"currency":"EUR","extra":true}`},
		{4, "", true, "shop.order.created", "bin-2", "1.0", "region", `plain text`},
		{5, "", true, "shop.unknown", "bin-3", "", "", "\x00\x01\x02"},
		{3, "", true, "shop.order.created", "bin-4", "9.9", "datacontenttype", `{"amount":`},
		{200, "application/cloudevents+json; charset=\"", false, "", "", "", "", `{`},
		{200, "multipart/form-data", false, "", "", "", "", `x`},
		{2, "", false, "", "", "", "", `{"specversion":"1.0","id":"6","source":"/s","type":"shop.order.created","data":{"amount":1e308,"currency":"EUR","email":"x"}}`},
		// Issue 21: numbers the schema validator's numeric keywords cannot
		// take (panic past 1e1000000, tens of ms below).
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"7","source":"/s","type":"shop.order.created","data":{"amount":1e1000001,"currency":"EUR"}}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"8","source":"/s","type":"shop.order.created","data":{"amount":-1e-999999,"currency":"USD"}}`},
		{1, "", false, "", "", "", "", `[{"specversion":"1.0","id":"9","source":"/s","type":"shop.order.created","data":{"amount":12345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901,"currency":"EUR"}}]`},
		// Extension counts around the limit, and values that cannot be
		// HTTP headers (control characters, invalid trace context).
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"10","source":"/s","type":"shop.any",` + fuzzExtensions(51) + `}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"11","source":"/s","type":"shop.any",` + fuzzExtensions(50) + `}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"12","source":"/s","type":"shop.any","region":"eu\r\nX-Injected: 1"}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"13","source":"/s","type":"shop.any","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v"}`},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"14","source":"/s","type":"shop.any","traceparent":"00-zz"}`},
		{4, "", true, "shop.any", "bin-5", "", "region", `text`},
		{2, "", true, "shop.any", "bin%0A6", "", "", `{}`},
		// Invalid UTF-8 and lone surrogates in ids.
		{0, "", false, "", "", "", "", "{\"specversion\":\"1.0\",\"id\":\"a\xff\",\"source\":\"/s\",\"type\":\"shop.any\"}"},
		{0, "", false, "", "", "", "", `{"specversion":"1.0","id":"a\ud800","source":"/s","type":"shop.any"}`},
		{5, "", true, "shop.any", "bin%FF7", "", "", "\x00"},
	}
	for _, s := range seeds {
		f.Add(s.pick, s.ct, s.binary, s.ceType, s.ceID, s.ceVersion, s.ceExt, []byte(s.body))
	}
}

// fuzzExtensions returns n extension members `"xI":"v"`, joined by commas.
func fuzzExtensions(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"x` + strconv.Itoa(i) + `":"v"`
	}
	return strings.Join(parts, ",")
}

// requireDeliverable checks what Parse promises of an event it accepts:
// a valid envelope, within the limits, every string attribute valid UTF-8
// and sendable as an HTTP header, and a JSON encoding.
func requireDeliverable(t *testing.T, ev *cloudevent.Event) {
	t.Helper()
	require.NoError(t, ev.Validate())
	require.NoError(t, ev.CheckDeliverable())
	require.LessOrEqual(t, len(ev.Extensions), cloudevent.MaxExtensions)
	for _, v := range []string{ev.ID, ev.Source, ev.Type, ev.Subject, ev.DataSchema, ev.DataContentType} {
		require.True(t, utf8.ValidString(v), "%q", v)
		require.NoError(t, cloudevent.CheckHeaderValue(v))
	}
	for name := range ev.Extensions {
		require.True(t, utf8.ValidString(ev.Ext(name)), "%s: %q", name, ev.Ext(name))
		require.NoError(t, cloudevent.CheckHeaderValue(ev.Ext(name)), name)
	}
	if ev.Data != nil {
		require.True(t, utf8.Valid(ev.Data), "data %q", ev.Data)
	}
	_, err := json.Marshal(ev)
	require.NoError(t, err)
}

// FuzzParse checks that no request makes Parse panic, that every
// rejection is a 400, 413, 415 or 422 *ingest.Error, and that every event
// it accepts keeps Parse's promises (requireDeliverable).
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, pick uint8, ct string, binary bool, ceType, ceID, ceVersion, ceExt string, body []byte) {
		r := fuzzRequest(t, pick, ct, binary, ceType, ceID, ceVersion, ceExt, body)
		req, err := ingest.Parse(r, fuzzLimits)
		requireInputError(t, err)
		if err == nil {
			require.NotEmpty(t, req.Events)
			for i := range req.Events {
				requireDeliverable(t, &req.Events[i])
			}
		}
	})
}

// FuzzParseAttributes fuzzes what one event carries: how many extensions
// (past the limit too), one attribute's name and value (control
// characters, invalid UTF-8, trace context, lengths), in structured or
// binary mode. Accepted events keep Parse's promises; the rest are 4xx with
// pointers.
func FuzzParseAttributes(f *testing.F) {
	for _, s := range []struct {
		n           uint16
		name, value string
		binary      bool
	}{
		{0, "region", "eu", false},
		{50, "region", "eu", false},
		{49, "region", "eu", true},
		{51, "region", "eu", false},
		{60, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", true},
		{3000, "x", "v", false},
		{0, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false},
		{0, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r", false},
		{0, "tracestate", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true},
		{0, "tracestate", "Rojo=1", false},
		{0, "subject", "a\nb", false},
		{0, "subject", "a%0Ab", true},
		{0, "id", "a\xff", false},
		{0, "id", "a%FF", true},
		{0, "deduplicationid", "k\x00", false},
		{0, "region", strings.Repeat("v", 4097), false},
		{0, "datacontenttype", "text/plain\x7f", false},
		{0, strings.Repeat("n", 65), "v", false},
		{0, "Upper", "v", true},
	} {
		f.Add(s.n, s.name, s.value, s.binary)
	}
	f.Fuzz(func(t *testing.T, n uint16, name, value string, binary bool) {
		n %= 4 * cloudevent.MaxExtensions
		var r *http.Request
		if binary {
			r = httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/events", strings.NewReader(`{"a":1}`))
			h := r.Header
			h["Content-Type"] = []string{"application/json"}
			h["Ce-Specversion"] = []string{"1.0"}
			h["Ce-Id"] = []string{"f-1"}
			h["Ce-Source"] = []string{"/fuzz"}
			h["Ce-Type"] = []string{"shop.any"}
			for i := range int(n) {
				h["Ce-X"+strconv.Itoa(i)] = []string{"v"}
			}
			h["Ce-"+name] = []string{value}
		} else {
			ev := map[string]any{"specversion": "1.0", "id": "f-1", "source": "/fuzz", "type": "shop.any", "data": map[string]any{"a": 1}}
			for i := range int(n) {
				ev["x"+strconv.Itoa(i)] = "v"
			}
			ev[name] = value
			body, err := json.Marshal(ev)
			require.NoError(t, err)
			r = httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/api/events", bytes.NewReader(body))
			r.Header.Set("Content-Type", ingest.ContentTypeStructured)
		}
		req, err := ingest.Parse(r, ingest.Limits{})
		requireInputError(t, err)
		if err == nil {
			require.Len(t, req.Events, 1)
			requireDeliverable(t, &req.Events[0])
		}
	})
}

// pipeline is the ingest pipeline over a real SQLite store, the in-process
// queue and the real registry and subscription cache.
type pipeline struct {
	svc *ingest.Service
}

func newPipeline(tb testing.TB) *pipeline {
	tb.Helper()
	ctx := context.Background()
	p := pipelinetest.New(tb, pipelinetest.Config{})
	st, ids := p.Store, p.IDs
	now := time.Now().UTC().Truncate(time.Millisecond)
	orderSchema := json.RawMessage(`{"type":"object","required":["amount","currency"],"additionalProperties":false,
		"properties":{"amount":{"type":"number","minimum":0},"currency":{"enum":["EUR","USD"]},"email":{"type":"string","format":"email"},
		"items":{"type":"array","items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string","pattern":"^[A-Z]+-[0-9]+$"}}}}}}`)
	v := func(version string, status schema.VersionStatus, sch json.RawMessage) schema.Version {
		return schema.Version{Version: version, SchemaType: "JSON_SCHEMA", MimeType: "application/json", Schema: sch, Status: status, CreatedAt: now, UpdatedAt: now}
	}
	for _, et := range []*schema.EventType{
		{Code: "shop.order.created", Name: "Order created", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now, Versions: []schema.Version{
			v("1.0", schema.VersionCurrent, orderSchema),
			v("1.1", schema.VersionFinalising, json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["id"]}`)),
			v("0.9", schema.VersionDeprecated, json.RawMessage(`{"type":"object"}`)),
		}},
		{Code: "shop.order.archived", Name: "Archived", Status: schema.TypeArchive, CreatedAt: now, UpdatedAt: now},
		{Code: "shop.any", Name: "Anything", Status: schema.TypeCurrent, CreatedAt: now, UpdatedAt: now},
	} {
		require.NoError(tb, st.EventTypeInsert(ctx, et))
	}
	for i, filters := range [][]subscription.Filter{
		nil,
		{{Field: "data.amount", Op: subscription.OpGte, Value: json.RawMessage(`100`)}},
		{{Field: "region", Op: subscription.OpIn, Value: json.RawMessage(`["eu","us"]`)}, {Field: "data.items.0.sku", Op: subscription.OpPrefix, Value: json.RawMessage(`"A"`)}},
	} {
		sub := &subscription.Subscription{
			ID: ids.New(), Code: "fuzz-" + string(rune('a'+i)), Name: "fuzz",
			EventTypes: []subscription.Binding{{EventTypeCode: "shop.*"}},
			Filters:    filters, Target: "http://127.0.0.1:9/hook", CreatedAt: now, UpdatedAt: now,
		}
		sub.ApplyDefaults()
		require.Empty(tb, sub.Validate())
		require.NoError(tb, st.SubscriptionInsert(ctx, sub))
	}
	return &pipeline{svc: p.Ingest}
}

// FuzzIngestPipeline runs Parse and Service.Ingest over real adapters: no
// input may panic or fail with anything but a 400, 413, 415 or 422
// *ingest.Error (a plain error would be a 503, a panic a 500). Its seeds
// include the numbers that broke the schema validator (issue 21).
func FuzzIngestPipeline(f *testing.F) {
	addSeeds(f)
	p := newPipeline(f)
	f.Fuzz(func(t *testing.T, pick uint8, ct string, binary bool, ceType, ceID, ceVersion, ceExt string, body []byte) {
		r := fuzzRequest(t, pick, ct, binary, ceType, ceID, ceVersion, ceExt, body)
		req, err := ingest.Parse(r, fuzzLimits)
		requireInputError(t, err)
		if err != nil {
			return
		}
		results, err := p.svc.Ingest(t.Context(), req)
		requireInputError(t, err)
		if err == nil {
			require.Len(t, results, len(req.Events))
			for _, res := range results {
				require.NotNil(t, res.Event)
			}
		}
	})
}

// fuzzTypes are the event types FuzzIngestData picks from: schema versions
// of every status, an ARCHIVE type, a type without versions, an unknown one.
var fuzzTypes = []string{"shop.order.created", "shop.order.archived", "shop.any", "shop.unknown"} //nolint:gochecknoglobals // read-only test fixture

// FuzzIngestData keeps the envelope valid and fuzzes what schema
// validation and matching see: the type, the dataversion, the data and the
// region extension, single or as a batch item. Only 422 may come back.
func FuzzIngestData(f *testing.F) {
	for _, s := range []struct {
		pick                uint8
		dataversion, region string
		data                string
		batch               bool
	}{
		{0, "", "eu", `{"amount":120,"currency":"EUR","items":[{"sku":"AB-1"}]}`, false},
		{0, "1.0", "us", `{"amount":-1,"currency":"GBP","email":"x","extra":null}`, true},
		{0, "1.1", "", `{"id":1}`, false},
		{0, "0.9", "eu", `[]`, true},
		{0, "7.3", "", `{}`, false},
		{1, "", "", `{}`, false},
		{2, "", "eu", `{"amount":1e308,"items":[{"sku":"A"}]}`, false},
		{3, "", "", `null`, true},
		{0, "", "", `{"amount":1,"currency":"USD","items":[{"sku":"X-1"},{},{"sku":7}]}`, false},
		// Issue 21: huge exponents and digit counts under minimum, enum
		// and the other numeric keywords.
		{0, "", "", `{"amount":1e1000001,"currency":"EUR"}`, false},
		{0, "1.0", "", `{"amount":-1E+999999,"currency":"EUR"}`, true},
		{0, "", "", `{"amount":1,"currency":1e-999999}`, false},
		{0, "", "eu", `{"amount":1.` + strings.Repeat("5", 120) + `,"currency":"USD"}`, false},
		{0, "", "", `{"amount":1,"currency":"EUR","items":[{"sku":"A-1","n":1e400}]}`, false},
	} {
		f.Add(s.pick, s.dataversion, s.region, []byte(s.data), s.batch)
	}
	p := newPipeline(f)
	n := 0
	f.Fuzz(func(t *testing.T, pick uint8, dataversion, region string, data []byte, batch bool) {
		if !json.Valid(data) {
			return // the envelope must stay valid; malformed data is FuzzParse's
		}
		n++
		ev := map[string]any{
			"specversion": "1.0", "id": "d" + strconv.Itoa(n), "source": "/fuzz",
			"type": fuzzTypes[int(pick)%len(fuzzTypes)], "data": json.RawMessage(data),
		}
		if dataversion != "" {
			ev["dataversion"] = dataversion
		}
		if region != "" {
			ev["region"] = region
		}
		body, err := json.Marshal(ev)
		require.NoError(t, err)
		ct := ingest.ContentTypeStructured
		if batch {
			body = append(append([]byte("["), body...), ']')
			ct = ingest.ContentTypeBatch
		}
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/events", bytes.NewReader(body))
		r.Header.Set("Content-Type", ct)
		req, err := ingest.Parse(r, ingest.Limits{})
		if err != nil {
			// A dataversion or region that is not a valid attribute value.
			requireInputError(t, err)
			return
		}
		_, err = p.svc.Ingest(t.Context(), req)
		requireInputError(t, err)
		if ie, ok := errors.AsType[*ingest.Error](err); ok {
			require.Equal(t, http.StatusUnprocessableEntity, ie.Status, "%v", ie)
			require.NotEmpty(t, ie.Violations)
		}
	})
}
