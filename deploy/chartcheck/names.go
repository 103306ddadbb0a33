package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// settingNames are the environment variable names the chart may set.
type settingNames struct {
	// gateway are the HOOKLANE_* settings `hooklane serve` reads: the
	// README's configuration table, generated from the code.
	gateway map[string]bool
	// contract are the HOOKLANE_* names API.md §9 defines; nil when API.md
	// was not given.
	contract map[string]bool
	// otel are the OpenTelemetry variables (otelNameSet).
	otel map[string]bool
	// noted are the names already reported as not checked.
	noted map[string]bool
}

var (
	settingNameRE   = regexp.MustCompile("^\\| `(HOOKLANE_[A-Z0-9_]+)`")
	contractNamesRE = regexp.MustCompile("`(HOOKLANE_[A-Z0-9_]+)`")
)

// loadSettingNames reads the README's generated configuration table
// (between the config-doc markers) and, when contract is not empty, the
// table of API.md §9.
func loadSettingNames(readme, contract string) (*settingNames, error) {
	b, err := os.ReadFile(readme)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	text := string(b)
	_, rest, ok := strings.Cut(text, "<!-- config-doc:begin -->")
	table, _, ok2 := strings.Cut(rest, "<!-- config-doc:end -->")
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: no config-doc table between <!-- config-doc:begin --> and <!-- config-doc:end -->", readme)
	}
	n := &settingNames{gateway: map[string]bool{}, otel: otelNameSet(), noted: map[string]bool{}}
	for line := range strings.SplitSeq(table, "\n") {
		if m := settingNameRE.FindStringSubmatch(line); m != nil {
			n.gateway[m[1]] = true
		}
	}
	if len(n.gateway) < 10 || !n.gateway["HOOKLANE_ROLES"] {
		return nil, fmt.Errorf("%s: the config-doc table lists %d settings, without HOOKLANE_ROLES: not the table expected", readme, len(n.gateway))
	}
	if contract == "" {
		return n, nil
	}
	b, err = os.ReadFile(contract)
	if err != nil {
		return nil, fmt.Errorf("read contract: %w", err)
	}
	_, rest, ok = strings.Cut(string(b), "\n## 9.")
	section, _, _ := strings.Cut(rest, "\n## ")
	if !ok {
		return nil, fmt.Errorf("%s: no section 9", contract)
	}
	n.contract = map[string]bool{}
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range contractNamesRE.FindAllStringSubmatch(first, -1) {
			n.contract[m[1]] = true
		}
	}
	if !n.contract["HOOKLANE_LISTEN"] {
		return nil, fmt.Errorf("%s: §9 names no HOOKLANE_LISTEN: not the table expected", contract)
	}
	return n, nil
}

// errNotInContract marks a name only API.md defines, met without API.md.
var errNotInContract = errors.New("not read by the gateway (not in the README's configuration table); pass -contract API.md to check it against §9")

// checkEnvName checks one environment variable name the chart sets. A
// name only API.md may define, met without API.md, is reported once and
// passes.
func (n *settingNames) checkEnvName(name string) error {
	switch {
	case strings.HasPrefix(name, "HOOKLANE_"):
		if n.gateway[name] {
			return nil
		}
		if n.contract == nil {
			if !n.noted[name] {
				n.noted[name] = true
				fmt.Printf("chartcheck: note: %s is %v\n", name, errNotInContract)
			}
			return nil
		}
		if n.contract[name] {
			return nil
		}
		return errors.New("neither a setting of the gateway (README configuration table) nor a name of API.md §9")
	case strings.HasPrefix(name, "OTEL_"):
		if n.otel[name] {
			return nil
		}
		return errors.New("not an OpenTelemetry SDK environment variable this gateway's tracer reads (general SDK, trace, batch span processor and OTLP exporter variables)")
	}
	return nil
}

// otelNameSet returns the environment variables of the OpenTelemetry
// specification that apply to a trace-only SDK with the batch span
// processor and the OTLP exporter.
func otelNameSet() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{
		"OTEL_SDK_DISABLED", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME", "OTEL_LOG_LEVEL", "OTEL_PROPAGATORS",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_TRACES_EXPORTER",
		"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
		"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT",
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_SPAN_EVENT_COUNT_LIMIT",
		"OTEL_SPAN_LINK_COUNT_LIMIT", "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
	} {
		m[n] = true
	}
	for _, signal := range []string{"", "TRACES_"} {
		for _, s := range []string{
			"ENDPOINT", "HEADERS", "PROTOCOL", "TIMEOUT", "COMPRESSION", "INSECURE",
			"CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE",
		} {
			m["OTEL_EXPORTER_OTLP_"+signal+s] = true
		}
	}
	return m
}
