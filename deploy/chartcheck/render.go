package main

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Where the chart is rendered: the release and the cluster it pretends to
// install on.
const (
	releaseName      = "hl"
	releaseNamespace = "hooklane"
	kubeVersion      = "v1.33.0"
)

// prometheusOperatorAPI is the API version whose presence makes the chart
// render its ServiceMonitor.
const prometheusOperatorAPI = "monitoring.coreos.com/v1"

func loadChart(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("parse kube version: %w", err)
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, kv.String()) {
		return nil, fmt.Errorf("chart %s: kubeVersion %q excludes %s, the version it is checked on", dir, ch.Metadata.KubeVersion, kv)
	}
	return ch, nil
}

// lintChart runs Helm's linter (helm lint --strict): Chart.yaml, the
// values file and the templates; anything above an INFO fails.
func lintChart(dir string, vals map[string]any) error {
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return fmt.Errorf("parse kube version: %w", err)
	}
	l := lint.AllWithKubeVersion(dir, vals, releaseNamespace, kv)
	var errs []error
	for _, m := range l.Messages {
		if m.Severity > support.InfoSev {
			errs = append(errs, m)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("helm lint: %w", err)
	}
	return nil
}

// render renders the chart as `helm template` does, on a cluster serving
// the default API versions plus apiVersions, and returns the manifests
// (one YAML document each) by template file, NOTES.txt excluded.
func render(ch *chart.Chart, vals map[string]any, apiVersions []string) (map[string][]string, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(slices.Clone(caps.APIVersions), apiVersions...)
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("parse kube version: %w", err)
	}
	caps.KubeVersion = *kv
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, fmt.Errorf("process dependencies: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, caps)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	// Strict: a template reading a value that does not exist fails.
	files, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	out := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if path.Base(name) == "NOTES.txt" {
			if strings.TrimSpace(files[name]) == "" {
				return nil, errors.New("NOTES.txt renders empty")
			}
			continue
		}
		docs := releaseutil.SplitManifests(files[name])
		keys := slices.Collect(maps.Keys(docs))
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			if strings.TrimSpace(stripComments(docs[k])) == "" {
				continue
			}
			out[name] = append(out[name], docs[k])
		}
	}
	return out, nil
}

// stripComments drops YAML comment lines, to tell an empty document from
// one with content.
func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// decoder decodes manifests strictly into typed API objects.
type decoder struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
}

func newDecoder() (*decoder, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register kubernetes types: %w", err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register prometheus-operator types: %w", err)
	}
	return &decoder{scheme: s, codecs: serializer.NewCodecFactory(s, serializer.EnableStrict)}, nil
}

// decode decodes one YAML manifest into its typed object. An unknown,
// misspelt (field names are case-sensitive) or duplicate field, a kind the
// scheme does not know, or a value of the wrong type is an error.
func (d *decoder) decode(doc string) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
	if err != nil {
		// Strict errors come with the object decoded anyway: still fail.
		return nil, nil, fmt.Errorf("decode strictly: %w", err)
	}
	return obj, gvk, nil
}

// selfTest proves the decoder strict before trusting it: manifests with an
// unknown field, a field in the wrong case, a duplicate field and an
// unknown kind must all be refused, and the clean one accepted.
func (d *decoder) selfTest() error {
	const clean = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n    - port: 80\n"
	if _, _, err := d.decode(clean); err != nil {
		return fmt.Errorf("self-test: a valid Service was refused: %w", err)
	}
	bad := map[string]string{
		"unknown field":   strings.Replace(clean, "    - port: 80", "    - port: 80\n      portt: 81", 1),
		"wrong case":      strings.Replace(clean, "  ports:", "  Ports:", 1),
		"duplicate field": strings.Replace(clean, "  name: s", "  name: s\n  name: t", 1),
		"unknown kind":    strings.Replace(clean, "kind: Service", "kind: Servise", 1),
		"wrong type":      strings.Replace(clean, "port: 80", "port: eighty", 1),
		"ServiceMonitor unknown field": "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: m\nspec:\n" +
			"  selector: {}\n  endpoints:\n    - port: http\n      intervall: 30s\n",
	}
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		if _, _, err := d.decode(bad[name]); err == nil {
			return fmt.Errorf("self-test: a manifest with a %s was accepted: the decoder is not strict", name)
		}
	}
	return nil
}
