package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// valueSet is one way of installing the chart.
type valueSet struct {
	name string
	// values are merged over requiredValues, unless bare.
	values string
	// bare renders the chart's own defaults alone.
	bare bool
	// apiVersions are served by the pretend cluster besides the defaults.
	apiVersions []string
	// wantErr, when set, is part of the reason the chart must refuse the
	// values with; nothing is rendered.
	wantErr string
	// want is every object rendered, as Kind/name, exactly.
	want []string
	// external are the objects the values name that exist outside the
	// chart (existing Secrets, a service account), as Kind/name.
	external []string
}

// requiredValues are the values without which the chart renders nothing:
// an API key, MongoDB and the SQS queue.
func requiredValues() map[string]any {
	return mustYAML(`
apiKeys:
  entries: ["ops:admin:3b7f0c1d9e8a4f2b6c5d7e9f1a2b3c4d", "shop team:producer:9c1e:5d,2a7f"]
mongodb:
  uri: mongodb://hooklane:secret@mongo-0.mongo,mongo-1.mongo,mongo-2.mongo/?replicaSet=rs0
sqs:
  queueUrl: https://sqs.eu-west-1.amazonaws.com/123456789012/hooklane-jobs.fifo
`)
}

// The objects of the default split topology.
var splitObjects = []string{
	"ServiceAccount/hl-hooklane", "Secret/hl-hooklane",
	"Service/hl-hooklane", "Service/hl-hooklane-metrics",
	"Deployment/hl-hooklane-api", "Deployment/hl-hooklane-router", "Deployment/hl-hooklane-pollers",
	"HorizontalPodAutoscaler/hl-hooklane-api", "HorizontalPodAutoscaler/hl-hooklane-router",
	"PodDisruptionBudget/hl-hooklane-api", "PodDisruptionBudget/hl-hooklane-router", "PodDisruptionBudget/hl-hooklane-pollers",
}

func cases() []valueSet {
	with := func(extra ...string) []string { return append(slices.Clone(splitObjects), extra...) }
	return []valueSet{
		{name: "defaults alone", bare: true, wantErr: "API keys are required"},
		{name: "split (defaults + required values)", want: splitObjects},
		{
			name: "split, Prometheus operator present", apiVersions: []string{prometheusOperatorAPI},
			want: with("ServiceMonitor/hl-hooklane"),
		},
		{
			name: "split, ServiceMonitor off despite the operator", apiVersions: []string{prometheusOperatorAPI},
			values: "serviceMonitor: {enabled: false}", want: splitObjects,
		},
		{
			name: "split, ServiceMonitor forced, no operator", values: "serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}}",
			want: with("ServiceMonitor/hl-hooklane"),
		},
		{name: "split, HPA and PDB off", values: `
api: {autoscaling: {enabled: false}, podDisruptionBudget: {enabled: false}, replicaCount: 3}
router: {autoscaling: {enabled: false}, podDisruptionBudget: {enabled: false}}
pollers: {podDisruptionBudget: {enabled: false}}
`, want: []string{
			"ServiceAccount/hl-hooklane", "Secret/hl-hooklane", "Service/hl-hooklane", "Service/hl-hooklane-metrics",
			"Deployment/hl-hooklane-api", "Deployment/hl-hooklane-router", "Deployment/hl-hooklane-pollers",
		}},
		{name: "combined (one Deployment, every role)", values: `
topology: combined
combined: {replicaCount: 3}
`, want: []string{
			"ServiceAccount/hl-hooklane", "Secret/hl-hooklane", "Service/hl-hooklane", "Service/hl-hooklane-metrics",
			"Deployment/hl-hooklane-combined", "PodDisruptionBudget/hl-hooklane-combined",
		}},
		{name: "combined, autoscaled", values: `
topology: combined
combined: {autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 6}}
`, want: []string{
			"ServiceAccount/hl-hooklane", "Secret/hl-hooklane", "Service/hl-hooklane", "Service/hl-hooklane-metrics",
			"Deployment/hl-hooklane-combined", "HorizontalPodAutoscaler/hl-hooklane-combined", "PodDisruptionBudget/hl-hooklane-combined",
		}},
		{
			name: "split, every option", apiVersions: []string{prometheusOperatorAPI}, values: everyOption,
			want:     with("ServiceMonitor/hl-hooklane"),
			external: []string{"Secret/hooklane-keys", "Secret/hooklane-mongo", "Secret/hooklane-aws"},
		},
		{
			name: "existing secrets only, existing service account", values: `
apiKeys: {entries: [], existingSecret: hooklane-keys, existingSecretKey: keys}
mongodb: {uri: "", existingSecret: hooklane-mongo}
encryptionKey: {existingSecret: hooklane-crypto}
serviceAccount: {create: false, name: hooklane}
`, want: []string{
				"Service/hl-hooklane", "Service/hl-hooklane-metrics",
				"Deployment/hl-hooklane-api", "Deployment/hl-hooklane-router", "Deployment/hl-hooklane-pollers",
				"HorizontalPodAutoscaler/hl-hooklane-api", "HorizontalPodAutoscaler/hl-hooklane-router",
				"PodDisruptionBudget/hl-hooklane-api", "PodDisruptionBudget/hl-hooklane-router", "PodDisruptionBudget/hl-hooklane-pollers",
			},
			external: []string{"Secret/hooklane-keys", "Secret/hooklane-mongo", "Secret/hooklane-crypto", "ServiceAccount/hooklane"},
		},
		{name: "embedded single-pod trial on a volume", bare: true, values: `
apiKeys: {entries: ["ops:admin:3b7f0c1d9e8a4f2b6c5d7e9f1a2b3c4d"]}
topology: combined
embedded: {enabled: true, persistence: {enabled: true, size: 2Gi}}
combined: {replicaCount: 1}
`, want: []string{
			"ServiceAccount/hl-hooklane", "Secret/hl-hooklane", "Service/hl-hooklane", "Service/hl-hooklane-metrics",
			"Deployment/hl-hooklane-combined", "PodDisruptionBudget/hl-hooklane-combined", "PersistentVolumeClaim/hl-hooklane-data",
		}},

		// Values the chart must refuse.
		{name: "refused: no MongoDB", values: `mongodb: {uri: ""}`, wantErr: "MongoDB is required"},
		{name: "refused: no SQS queue", values: `sqs: {queueUrl: ""}`, wantErr: "an SQS FIFO queue is required"},
		{name: "refused: unknown topology", values: `topology: sharded`, wantErr: "at '/topology'"},
		{name: "refused: malformed API key", values: `apiKeys: {entries: ["ops:root:abc"]}`, wantErr: "name:role:key"},
		{name: "refused: API key without a key", values: `apiKeys: {entries: ["ops:admin: "]}`, wantErr: "name:role:key"},
		{name: "refused: API key name twice", values: `apiKeys: {entries: ["ops:admin:k1", "ops:viewer:k2"]}`, wantErr: "names a key twice"},
		{name: "refused: encryption key not 32 bytes", values: `encryptionKey: {value: c2hvcnQ=}`, wantErr: "base64 of 32 bytes"},
		{name: "refused: chart-managed setting in env", values: `env: {HOOKLANE_ROLES: api}`, wantErr: "HOOKLANE_ROLES is set by the chart"},
		{name: "refused: non-HOOKLANE name in env", values: `router: {env: {GOMAXPROCS: "2"}}`, wantErr: "use extraEnv"},
		{name: "refused: chart-managed OTEL name", values: `tracing: {env: {OTEL_SERVICE_NAME: x}}`, wantErr: "is set by the chart"},
		{name: "refused: embedded with several pods", bare: true, values: `
apiKeys: {entries: ["ops:admin:3b7f0c1d9e8a4f2b6c5d7e9f1a2b3c4d"]}
embedded: {enabled: true}
`, wantErr: "embedded.enabled needs a single pod"},
		{name: "refused: misspelt value (values schema)", values: `api: {replicacount: 3}`, wantErr: "replicacount"},
		{name: "refused: value of the wrong type", values: `router: {autoscaling: {maxReplicas: "ten"}}`, wantErr: "maxReplicas"},
		{name: "refused: serviceMonitor.enabled not a mode", values: `serviceMonitor: {enabled: maybe}`, wantErr: "at '/serviceMonitor/enabled'"},
	}
}

// everyOption sets every optional value at once.
const everyOption = `
apiKeys: {entries: [], existingSecret: hooklane-keys}
mongodb: {uri: "", existingSecret: hooklane-mongo, existingSecretKey: uri, database: webhooks}
encryptionKey: {value: "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="}
sqs: {region: eu-west-1, endpoint: "https://sqs.eu-west-1.amazonaws.com"}
aws: {region: eu-west-1, credentialsSecret: hooklane-aws}
serviceAccount:
  annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::123456789012:role/hooklane"}
image: {repository: registry.example.com/hooklane, tag: "1.2.3", pullPolicy: Always}
imagePullSecrets: [{name: registry}]
env: {HOOKLANE_STALE_QUEUED_AFTER: 10m, HOOKLANE_LOG_LEVEL: debug, HOOKLANE_ALLOW_UNKNOWN_TYPES: true}
extraEnv: [{name: GOMAXPROCS, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: "1"}}}]
tracing:
  endpoint: http://otel-collector.observability:4318
  sampler: parentbased_traceidratio
  samplerArg: 0.25
  env: {OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=shop", OTEL_BSP_MAX_QUEUE_SIZE: 4096}
serviceMonitor: {labels: {release: kube-prometheus-stack}, interval: 15s}
service: {type: LoadBalancer, port: 443, annotations: {service.beta.kubernetes.io/aws-load-balancer-internal: "true"}}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: hooklane, effect: NoSchedule}]
podAnnotations: {example.com/team: platform}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app.kubernetes.io/name: hooklane}}
api:
  preStopSleepSeconds: 5
  env: {HOOKLANE_MAX_BATCH: 500}
  autoscaling:
    metrics:
      - type: Pods
        pods:
          metric: {name: hooklane_http_requests_per_second}
          target: {type: AverageValue, averageValue: "200"}
    behavior: {scaleDown: {stabilizationWindowSeconds: 300}}
router:
  env: {HOOKLANE_ROUTER_CONCURRENCY: 256, HOOKLANE_LOG_LEVEL: info}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app.kubernetes.io/component: router}}
  podLabels: {example.com/tier: delivery}
pollers: {replicaCount: 3, resources: {requests: {cpu: 20m, memory: 48Mi}, limits: {memory: 128Mi}}}
`

// run renders the value set and checks it; it returns how many manifests
// were rendered.
func (c valueSet) run(ch *chart.Chart, dec *decoder, names *settingNames, dump string) (int, error) {
	vals := map[string]any{}
	if !c.bare {
		vals = requiredValues()
	}
	if c.values != "" {
		overlay, err := parseYAML(c.values)
		if err != nil {
			return 0, err
		}
		vals = merge(vals, overlay)
	}
	files, err := render(ch, vals, c.apiVersions)
	if c.wantErr != "" {
		if err == nil {
			return 0, fmt.Errorf("rendered, want a refusal containing %q", c.wantErr)
		}
		if !strings.Contains(err.Error(), c.wantErr) {
			return 0, fmt.Errorf("refused with %q, want a reason containing %q", err, c.wantErr)
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if dump != "" {
		if err := writeDump(dump, c.name, files); err != nil {
			return 0, err
		}
	}
	set, err := decodeAll(dec, files)
	if err != nil {
		return 0, err
	}
	got := set.keys()
	want := slices.Sorted(slices.Values(c.want))
	if !slices.Equal(got, want) {
		return 0, fmt.Errorf("rendered %v, want %v", got, want)
	}
	if err := set.check(names, c.external); err != nil {
		return 0, err
	}
	return len(got), nil
}

func mustYAML(s string) map[string]any {
	m, err := parseYAML(s)
	if err != nil {
		panic(err) // programmer error: the literal is in this file
	}
	return m
}

func parseYAML(s string) (map[string]any, error) {
	var m map[string]any
	if err := yaml.UnmarshalStrict([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("parse values: %w", err)
	}
	if m == nil {
		return nil, errors.New("parse values: empty")
	}
	return m, nil
}

// merge returns dst with src merged over it, maps recursively.
func merge(dst, src map[string]any) map[string]any {
	out := maps.Clone(dst)
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = merge(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// writeDump writes the rendered manifests of one value set to
// dir/<name>.yaml.
func writeDump(dir, name string, files map[string][]string) error {
	var b strings.Builder
	for _, file := range slices.Sorted(maps.Keys(files)) {
		for _, doc := range files[file] {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", file, strings.TrimSpace(doc))
		}
	}
	slug := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, slug+".yaml"), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}
