package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hooklane/hooklane/ingest"
	"github.com/hooklane/hooklane/pipelinetest"
	"github.com/hooklane/hooklane/schema"
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
	}
	for _, s := range seeds {
		f.Add(s.pick, s.ct, s.binary, s.ceType, s.ceID, s.ceVersion, s.ceExt, []byte(s.body))
	}
}

// FuzzParse checks that no request makes Parse panic, and that every
// rejection is a 400, 413 or 415 *ingest.Error.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, pick uint8, ct string, binary bool, ceType, ceID, ceVersion, ceExt string, body []byte) {
		r := fuzzRequest(t, pick, ct, binary, ceType, ceID, ceVersion, ceExt, body)
		req, err := ingest.Parse(r, fuzzLimits)
		requireInputError(t, err)
		if err == nil {
			require.NotEmpty(t, req.Events)
			for i := range req.Events {
				require.NoError(t, req.Events[i].Validate())
				// A parsed event re-encodes as JSON.
				_, merr := json.Marshal(&req.Events[i])
				require.NoError(t, merr)
			}
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
// *ingest.Error (a plain error would be a 503, a panic a 500).
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
