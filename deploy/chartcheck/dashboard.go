package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// grafanaPanel is the part of a Grafana panel the dashboard check reads.
type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *grafanaDS               `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource *grafanaDS `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// grafanaMacros stand for Grafana's interval macros when a query is parsed.
var grafanaMacros = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "3h")

var (
	labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	varRefRE      = regexp.MustCompile(`\$([a-zA-Z_]\w*)`)
)

// checkDashboard checks the Grafana dashboard: unique panel ids, panels
// within the 24-column grid and not overlapping, every query on the
// dashboard's Prometheus data source variable, and every PromQL expression
// (Grafana's interval macros replaced) parsed by Prometheus's own parser
// into an instant vector or a scalar; every query variable's selector
// parsed too. It returns how many expressions were checked. Whether the
// metrics exist is TestGrafanaDashboardMetricsExist's job (cmd/hooklane),
// against a running gateway.
func checkDashboard(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read dashboard: %w", err)
	}
	var d struct {
		UID           string         `json:"uid"`
		Title         string         `json:"title"`
		SchemaVersion int            `json:"schemaVersion"`
		Panels        []grafanaPanel `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		fail("uid, title and schemaVersion are required")
	}
	vars := map[string]bool{}
	p := parser.NewParser(parser.Options{})
	n := 0
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			fail("variable %s: query %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		if _, err := p.ParseMetricSelector(m[1]); err != nil {
			fail("variable %s: %q: %v", v.Name, m[1], err)
		}
		n++
	}
	if !vars["datasource"] {
		fail("no datasource variable: the queries cannot follow the data source picked on import")
	}
	ids := map[int]string{}
	type rect struct {
		title      string
		x, y, w, h int
	}
	var placed []rect
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, pn := range ps {
			if prev, dup := ids[pn.ID]; dup || pn.ID == 0 {
				fail("panel %q: id %d is missing or already taken by %q", pn.Title, pn.ID, prev)
			}
			ids[pn.ID] = pn.Title
			g := pn.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				fail("panel %q: gridPos %+v is outside the 24-column grid", pn.Title, g)
			}
			for _, r := range placed {
				if g.X < r.x+r.w && r.x < g.X+g.W && g.Y < r.y+r.h && r.y < g.Y+g.H {
					fail("panels %q and %q overlap", pn.Title, r.title)
				}
			}
			placed = append(placed, rect{pn.Title, g.X, g.Y, g.W, g.H})
			walk(pn.Panels)
			if pn.Type == "row" {
				continue
			}
			if len(pn.Targets) == 0 {
				fail("panel %q has no query", pn.Title)
			}
			refs := map[string]bool{}
			for _, t := range pn.Targets {
				for _, ds := range []*grafanaDS{pn.Datasource, t.Datasource} {
					if ds == nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
						fail("panel %q: a data source other than the Prometheus ${datasource} variable", pn.Title)
					}
				}
				if t.RefID == "" || refs[t.RefID] {
					fail("panel %q: refId %q is missing or repeated", pn.Title, t.RefID)
				}
				refs[t.RefID] = true
				expr, err := p.ParseExpr(grafanaMacros.Replace(t.Expr))
				if err != nil {
					fail("panel %q: %q: %v", pn.Title, t.Expr, err)
					continue
				}
				if typ := expr.Type(); typ != parser.ValueTypeVector && typ != parser.ValueTypeScalar {
					fail("panel %q: %q is a %s, not an instant vector or a scalar", pn.Title, t.Expr, typ)
				}
				for _, ref := range varRefRE.FindAllStringSubmatch(t.Expr, -1) {
					if !vars[ref[1]] && !strings.HasPrefix(ref[1], "__") {
						fail("panel %q: %q uses $%s, not a variable of the dashboard", pn.Title, t.Expr, ref[1])
					}
				}
				n++
			}
		}
	}
	walk(d.Panels)
	return n, errors.Join(errs...)
}
