// Command chartcheck validates the Helm chart in deploy/helm/hooklane
// without a Kubernetes cluster (none runs on the development and CI
// machines). It lints the chart with Helm's own linter, then renders it
// with the Helm v3 library — the loader, the values coalescing and the
// template engine that `helm install` uses, in strict mode so that a
// template reading a value that does not exist fails — for several value
// sets (see cases.go), on fake cluster capabilities, with and without the
// Prometheus operator's API. Every rendered manifest is decoded strictly
// into the Kubernetes API types (and the prometheus-operator types for the
// ServiceMonitor), as the API server's strict field validation does: an
// unknown or misspelt field, a duplicate field or a wrong type fails. Then
// it checks what the types cannot say (checks.go): every container runs
// non-root on a read-only root filesystem, probes reach /healthz and
// /readyz, every HOOKLANE_* variable is a real setting of the gateway,
// references between objects resolve, and each role runs exactly once.
// Value sets the chart must refuse are rendered too, and must fail with
// the expected reason. With -dashboard, it also checks the Grafana
// dashboard's structure and parses its PromQL with Prometheus's parser
// (dashboard.go).
//
// Usage (from the repository root, as `make verify` runs it):
//
//	cd deploy/chartcheck && go run . -chart ../helm/hooklane -readme ../../README.md \
//	    -dashboard ../grafana/hooklane.json [-contract ../../../shared/API.md]
//
// -dump DIR writes the manifests of each value set to DIR/<value set>.yaml.
//
// -readme is the README whose configuration table (generated from the
// gateway's settings by `hooklane config-doc`) lists the HOOKLANE_*
// variables the gateway reads; -contract, when given, adds the names
// API.md §9 defines that the gateway may not read yet (the chart passes
// HOOKLANE_ENCRYPTION_KEY through). Without it, a value set rendering such
// a name reports that the name was not checked against the contract.
//
// It lives in its own Go module so that Helm's, the Kubernetes API's and
// Prometheus's dependencies stay out of the product's go.mod.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	chartDir := flag.String("chart", "../helm/hooklane", "the chart directory")
	readme := flag.String("readme", "../../README.md", "the README with the generated configuration table")
	contract := flag.String("contract", "", "API.md, whose §9 adds contract names not yet read by the gateway (optional)")
	dump := flag.String("dump", "", "a directory to write each value set's rendered manifests to, for reading (optional)")
	dashboard := flag.String("dashboard", "", "a Grafana dashboard to check (optional)")
	flag.Parse()
	start := time.Now()
	if err := run(*chartDir, *readme, *contract, *dump, *dashboard); err != nil {
		fmt.Fprintln(os.Stderr, "chartcheck:", err)
		os.Exit(1)
	}
	fmt.Printf("chartcheck: ok (%s)\n", time.Since(start).Round(time.Millisecond))
}

func run(chartDir, readme, contract, dump, dashboard string) error {
	names, err := loadSettingNames(readme, contract)
	if err != nil {
		return err
	}
	dec, err := newDecoder()
	if err != nil {
		return err
	}
	if err := dec.selfTest(); err != nil {
		return err
	}
	ch, err := loadChart(chartDir)
	if err != nil {
		return err
	}
	if err := lintChart(chartDir, requiredValues()); err != nil {
		return err
	}
	var errs []error
	if dashboard != "" {
		n, err := checkDashboard(dashboard)
		if err != nil {
			errs = append(errs, err)
		} else {
			fmt.Printf("chartcheck: %s: %d PromQL expressions parse\n", dashboard, n)
		}
	}
	for _, c := range cases() {
		n, err := c.run(ch, dec, names, dump)
		if err != nil {
			errs = append(errs, fmt.Errorf("value set %q: %w", c.name, err))
			continue
		}
		if c.wantErr != "" {
			fmt.Printf("chartcheck: %-44s refused as expected\n", c.name)
			continue
		}
		fmt.Printf("chartcheck: %-44s %2d manifests, all valid\n", c.name, n)
	}
	return errors.Join(errs...)
}
