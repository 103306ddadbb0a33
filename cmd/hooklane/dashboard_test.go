package main

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// dashboardPath is the Grafana dashboard shipped for the gateway's metrics.
const dashboardPath = "../../deploy/grafana/hooklane.json"

// TestGrafanaDashboardMetricsExist runs a gateway with a little traffic
// (accepted, duplicate and rejected events, a delivery retried after a 503
// through the pending poller) and checks that every metric the Grafana
// dashboard's queries and variables read is in its /metrics, with every
// label a selector matches on, and every value an equality matcher asks
// for: a renamed metric or label breaks the test, not the dashboard.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	exprs := dashboardExprs(t, dashboardPath)
	require.GreaterOrEqual(t, len(exprs), 20, "the dashboard's queries were not found")

	recv := newReceiver(t)
	var failedOnce atomic.Bool
	recv.failFunc = func(d delivery) int {
		if strings.Contains(string(d.body), `"id":"d-1"`) && failedOnce.CompareAndSwap(false, true) {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	gw := startGateway(t, nil)
	gw.setup(t, recv.srv.URL+"/hooks", `,"retry":{"maxAttempts":3,"initialBackoffSeconds":1,"maxBackoffSeconds":1}`)
	event := func(id, typ string) string {
		return `{"specversion":"1.0","id":"` + id + `","source":"/shop","type":"` + typ + `","data":{}}`
	}
	var jobIDs []string
	for _, id := range []string{"d-1", "d-2"} {
		status, _, ev := gw.do(t, "POST", "/api/events", "application/cloudevents+json", event(id, "shop.order.created"), nil)
		require.Equal(t, http.StatusCreated, status, "%v", ev)
		jobIDs = append(jobIDs, ev["dispatchJobs"].([]any)[0].(map[string]any)["id"].(string))
	}
	status, _, _ := gw.do(t, "POST", "/api/events", "application/cloudevents+json", event("d-2", "shop.order.created"), nil)
	require.Equal(t, http.StatusOK, status, "duplicate")
	status, _, _ = gw.do(t, "POST", "/api/events", "application/cloudevents+json", event("u-1", "not.registered"), nil)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	for _, id := range jobIDs {
		gw.waitJob(t, id, "COMPLETED")
	}
	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool { // the router's hook runs just after the job is stored
		fams = scrapeFamilies(t, gw.base)
		return hasSeries(fams, "hooklane_deliveries_total", "outcome", "completed", 2)
	}, 30*time.Second, 20*time.Millisecond)

	checked := 0
	for _, expr := range exprs {
		sels := promQLSelectors(expr)
		require.NotEmpty(t, sels, "no metric found in %q", expr)
		for _, sel := range sels {
			fam, base := familyOf(fams, sel.metric)
			require.NotNil(t, fam, "metric %s (in %q) is not exported by the gateway", sel.metric, expr)
			for _, m := range sel.matchers {
				if m.label == "job" || m.label == "instance" { // added by Prometheus at scrape
					continue
				}
				if m.label == "le" {
					require.NotEqual(t, base, sel.metric, "le on %s, not a histogram's _bucket", sel.metric)
					continue
				}
				require.True(t, hasLabel(fam, m.label), "metric %s has no label %s (in %q)", sel.metric, m.label, expr)
				if m.op == "=" && !strings.Contains(m.value, "$") {
					require.True(t, hasSeries(fams, fam.GetName(), m.label, m.value, 1),
						"no series of %s has %s=%q (in %q)", fam.GetName(), m.label, m.value, expr)
				}
			}
			checked++
		}
	}
	t.Logf("%d queries, %d metric selectors checked", len(exprs), checked)
}

// dashboardExprs returns every PromQL expression of a Grafana dashboard:
// its panels' targets (rows' panels included) and its query variables
// (label_values(selector, label) gives its selector).
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	var out []string
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q has a target without expr", p.Title)
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			require.NoError(t, json.Unmarshal(v.Query, &q.Query))
		}
		m := labelValues.FindStringSubmatch(q.Query)
		require.NotNil(t, m, "variable query %q is not label_values(selector, label)", q.Query)
		out = append(out, m[1])
	}
	return out
}

type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

func scrapeFamilies(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics") //nolint:noctx // test
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// familyOf returns the family a metric name of a query reads and that
// family's name: the name itself, or a histogram's for its _bucket, _sum
// and _count series.
func familyOf(fams map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, string) {
	if f, ok := fams[name]; ok {
		return f, name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if f := fams[base]; ok && f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
			return f, base
		}
	}
	return nil, ""
}

func hasLabel(f *dto.MetricFamily, label string) bool {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				return true
			}
		}
	}
	return false
}

// hasSeries reports whether family name has a series with label=value and,
// for a counter, a value of at least minValue.
func hasSeries(fams map[string]*dto.MetricFamily, name, label, value string, minValue float64) bool {
	f := fams[name]
	if f == nil {
		return false
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				if f.GetType() != dto.MetricType_COUNTER || m.GetCounter().GetValue() >= minValue {
					return true
				}
			}
		}
	}
	return false
}

// promSelector is a metric named in a PromQL expression, with the label
// matchers of its braces.
type promSelector struct {
	metric   string
	matchers []promMatcher
}

type promMatcher struct{ label, op, value string }

// promQLKeywords returns the PromQL words that are not metric names when not
// followed by "(": binary operators, modifiers, literals, and the
// aggregation operators (followed by or without in `sum by (le) (…)`).
func promQLKeywords() []string {
	return []string{
		"and", "or", "unless", "bool", "offset", "on", "ignoring", "by", "without",
		"group_left", "group_right", "inf", "nan", "atan2", "start", "end",
		"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
		"quantile", "limitk", "limit_ratio",
	}
}

// promQLSelectors lexes a PromQL expression (with Grafana's $variables)
// and returns the metric selectors it reads. An identifier followed by "("
// is a function or an aggregation; the parenthesised label list after by,
// without, on, ignoring, group_left and group_right holds labels; ranges
// in [] and strings are skipped; a selector's {} gives its matchers.
func promQLSelectors(expr string) []promSelector {
	var out []promSelector
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	isIdent := func(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n') {
			i++
		}
		return i
	}
	// skipString returns the index after the string literal at i.
	skipString := func(i int) int {
		q := expr[i]
		for i++; i < len(expr) && expr[i] != q; i++ {
			if expr[i] == '\\' && q != '`' {
				i++
			}
		}
		return i + 1
	}
	// closing returns the index after the bracket closing the one at i.
	closing := func(i int, open, closeC byte) int {
		depth := 0
		for i < len(expr) {
			switch c := expr[i]; c {
			case '"', '\'', '`':
				i = skipString(i)
				continue
			case open:
				depth++
			case closeC:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(i)
		case c == '[':
			i = closing(i, '[', ']')
		case c == '$': // a Grafana variable or macro
			i++
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '{' || expr[i] == '}') {
				i++
			}
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9'):
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '{': // braces without a name before them: {__name__=...}
			sel := promSelector{matchers: promQLMatchers(expr[i+1 : closing(i, '{', '}')-1])}
			i = closing(i, '{', '}')
			for _, m := range sel.matchers {
				if m.label == "__name__" && m.op == "=" {
					sel.metric = m.value
				}
			}
			if sel.metric != "" {
				out = append(out, sel)
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			if slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, word) {
				if next < len(expr) && expr[next] == '(' {
					i = closing(next, '(', ')')
				}
				continue
			}
			if next < len(expr) && expr[next] == '(' || slices.Contains(promQLKeywords(), word) {
				continue
			}
			sel := promSelector{metric: word}
			if next < len(expr) && expr[next] == '{' {
				end := closing(next, '{', '}')
				sel.matchers = promQLMatchers(expr[next+1 : end-1])
				i = end
			}
			out = append(out, sel)
		default:
			i++
		}
	}
	return out
}

var promMatcherRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`" + `)`)

func promQLMatchers(s string) []promMatcher {
	var out []promMatcher
	for _, m := range promMatcherRE.FindAllStringSubmatch(s, -1) {
		out = append(out, promMatcher{label: m[1], op: m[2], value: m[3][1 : len(m[3])-1]})
	}
	return out
}

// TestPromQLSelectors checks the lexer the dashboard test relies on.
func TestPromQLSelectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want []promSelector
	}{
		{`rate(a_total[5m])`, []promSelector{{metric: "a_total"}}},
		{
			`sum by (le, pool) (rate(b_bucket{job=~"$job",outcome="x"}[$__rate_interval]))`,
			[]promSelector{{metric: "b_bucket", matchers: []promMatcher{{"job", "=~", "$job"}, {"outcome", "=", "x"}}}},
		},
		{`histogram_quantile(0.95, sum(rate(c_bucket[1m])) by (le))`, []promSelector{{metric: "c_bucket"}}},
		{
			`sum(rate(a[5m])) / ignoring (code) group_left(route) sum(b offset 1h) > bool 0.5 and on(x) c unless d or e`,
			[]promSelector{{metric: "a"}, {metric: "b"}, {metric: "c"}, {metric: "d"}, {metric: "e"}},
		},
		{`topk(10, x{route!~"/api/stream.*", l='a}b'})`, []promSelector{{metric: "x", matchers: []promMatcher{{"route", "!~", "/api/stream.*"}, {"l", "=", "a}b"}}}}},
		{`{__name__="named_metric", a="1"} * 1e-3 + inf`, []promSelector{{metric: "named_metric", matchers: []promMatcher{{"__name__", "=", "named_metric"}, {"a", "=", "1"}}}}},
		{`max_over_time(g[1h:5m]) - count without (instance) (h)`, []promSelector{{metric: "g"}, {metric: "h"}}},
		{`topk by (pool) (3, i) + quantile without (x) (0.9, j)`, []promSelector{{metric: "i"}, {metric: "j"}}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, promQLSelectors(tt.expr), tt.expr)
	}
}
