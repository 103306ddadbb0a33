package main

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// objectSet is what one value set rendered, decoded.
type objectSet struct {
	all         map[string]runtime.Object // by Kind/name
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	secrets     []*corev1.Secret
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	monitors    []*monitoringv1.ServiceMonitor
	accounts    []*corev1.ServiceAccount
	claims      []*corev1.PersistentVolumeClaim
}

func decodeAll(dec *decoder, files map[string][]string) (*objectSet, error) {
	set := &objectSet{all: map[string]runtime.Object{}}
	var errs []error
	for _, file := range slices.Sorted(maps.Keys(files)) {
		for i, doc := range files[file] {
			obj, gvk, err := dec.decode(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d: %w", file, i+1, err))
				continue
			}
			meta, ok := obj.(metav1.Object)
			if !ok {
				errs = append(errs, fmt.Errorf("%s, document %d: %s has no metadata", file, i+1, gvk.Kind))
				continue
			}
			key := gvk.Kind + "/" + meta.GetName()
			if _, dup := set.all[key]; dup {
				errs = append(errs, fmt.Errorf("%s: %s rendered twice", file, key))
				continue
			}
			set.all[key] = obj
			switch o := obj.(type) {
			case *appsv1.Deployment:
				set.deployments = append(set.deployments, o)
			case *corev1.Service:
				set.services = append(set.services, o)
			case *corev1.Secret:
				set.secrets = append(set.secrets, o)
			case *autoscalingv2.HorizontalPodAutoscaler:
				set.hpas = append(set.hpas, o)
			case *policyv1.PodDisruptionBudget:
				set.pdbs = append(set.pdbs, o)
			case *monitoringv1.ServiceMonitor:
				set.monitors = append(set.monitors, o)
			case *corev1.ServiceAccount:
				set.accounts = append(set.accounts, o)
			case *corev1.PersistentVolumeClaim:
				set.claims = append(set.claims, o)
			default:
				errs = append(errs, fmt.Errorf("%s: %s is a kind chartcheck does not check: add its checks", file, key))
			}
		}
	}
	return set, errors.Join(errs...)
}

func (s *objectSet) keys() []string { return slices.Sorted(maps.Keys(s.all)) }

// has reports whether Kind/name is rendered or exists outside the chart.
func (s *objectSet) has(key string, external []string) bool {
	_, ok := s.all[key]
	return ok || slices.Contains(external, key)
}

// check runs every cross-object check; names are the settings the
// gateway reads.
func (s *objectSet) check(names *settingNames, external []string) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for key, obj := range s.all {
		add(checkLabels(key, obj.(metav1.Object)))
	}
	autoscaled := map[string]bool{}
	for _, h := range s.hpas {
		add(s.checkHPA(h))
		autoscaled[h.Spec.ScaleTargetRef.Name] = true
	}
	roles := map[string][]string{}
	for _, d := range s.deployments {
		add(s.checkDeployment(d, names, external, autoscaled[d.Name]))
		for _, r := range strings.Split(envValue(d.Spec.Template.Spec.Containers[0].Env, "HOOKLANE_ROLES"), ",") {
			roles[r] = append(roles[r], d.Name)
		}
	}
	for _, r := range []string{"api", "router", "pollers"} {
		if len(roles[r]) != 1 {
			add(fmt.Errorf("role %s runs in %d Deployments %v, want exactly 1", r, len(roles[r]), roles[r]))
		}
		delete(roles, r)
	}
	for r, ds := range roles {
		add(fmt.Errorf("Deployments %v run the unknown role %q", ds, r))
	}
	for _, svc := range s.services {
		add(s.checkService(svc))
	}
	for _, p := range s.pdbs {
		if n := len(s.deploymentsSelectedBy(p.Spec.Selector)); n != 1 {
			add(fmt.Errorf("PodDisruptionBudget/%s selects the pods of %d Deployments, want 1", p.Name, n))
		}
		if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
			add(fmt.Errorf("PodDisruptionBudget/%s sets neither maxUnavailable nor minAvailable", p.Name))
		}
	}
	for _, m := range s.monitors {
		add(s.checkServiceMonitor(m))
	}
	for _, sec := range s.secrets {
		add(checkSecret(sec))
	}
	return errors.Join(errs...)
}

// checkLabels requires the recommended labels Helm users select by.
func checkLabels(key string, m metav1.Object) error {
	for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
		if m.GetLabels()[l] == "" {
			return fmt.Errorf("%s has no label %s", key, l)
		}
	}
	return nil
}

func (s *objectSet) checkDeployment(d *appsv1.Deployment, names *settingNames, external []string, autoscaled bool) error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("Deployment/%s: "+format, append([]any{d.Name}, args...)...))
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		fail("its selector %v does not select its own pod template's labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	if autoscaled && d.Spec.Replicas != nil {
		fail("sets replicas while an HPA scales it (every upgrade would reset the HPA's count)")
	}
	if !autoscaled && d.Spec.Replicas == nil {
		fail("sets no replicas and no HPA scales it")
	}
	pod := d.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		fail("the pod's securityContext does not set runAsNonRoot: true")
	}
	if pod.ServiceAccountName == "" || !s.has("ServiceAccount/"+pod.ServiceAccountName, external) {
		fail("runs as service account %q, neither rendered nor declared existing", pod.ServiceAccountName)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		switch {
		case v.Secret != nil:
			if !s.has("Secret/"+v.Secret.SecretName, external) {
				fail("volume %s mounts Secret %s, neither rendered nor declared existing", v.Name, v.Secret.SecretName)
			}
			for _, it := range v.Secret.Items {
				if !s.secretHasKey(v.Secret.SecretName, it.Key) {
					fail("volume %s mounts key %q, absent from Secret %s", v.Name, it.Key, v.Secret.SecretName)
				}
			}
		case v.PersistentVolumeClaim != nil:
			if !s.has("PersistentVolumeClaim/"+v.PersistentVolumeClaim.ClaimName, external) {
				fail("volume %s claims %s, neither rendered nor declared existing", v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		case v.EmptyDir != nil:
		default:
			fail("volume %s is of a kind chartcheck does not check", v.Name)
		}
	}
	if len(pod.InitContainers) > 0 {
		fail("has init containers: extend chartcheck to check them")
	}
	if len(pod.Containers) != 1 {
		fail("has %d containers, want 1", len(pod.Containers))
		return errors.Join(errs...)
	}
	c := pod.Containers[0]
	for _, msg := range checkContainerSecurity(c, psc) {
		fail("container %s: %s", c.Name, msg)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"startupProbe", c.StartupProbe, "/healthz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			fail("%s is not an HTTP GET probe", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			fail("%s probes %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
		}
		if _, ok := resolvePort(p.probe.HTTPGet.Port, ports); !ok {
			fail("%s probes port %s, which the container does not expose", p.name, p.probe.HTTPGet.Port.String())
		}
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.TimeoutSeconds <= 3 {
		fail("readinessProbe timeout %ds: /readyz may take 3 s to answer (its pings' bound)", c.ReadinessProbe.TimeoutSeconds)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		fail("container %s: set CPU and memory requests and a memory limit", c.Name)
	}
	readOnlyTmp := true
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			fail("mounts volume %s, which the pod does not have", m.Name)
			continue
		}
		if v.Secret != nil && !m.ReadOnly {
			fail("mounts Secret volume %s writable", m.Name)
		}
		if m.MountPath == "/tmp" {
			readOnlyTmp = v.EmptyDir == nil || m.ReadOnly
		}
	}
	if readOnlyTmp {
		fail("no writable emptyDir at /tmp (the root filesystem is read-only)")
	}
	errs = append(errs, s.checkEnv(d.Name, c, names, external, ports, volumes)...)
	if grace := pod.TerminationGracePeriodSeconds; grace != nil {
		if st, err := time.ParseDuration(envValue(c.Env, "HOOKLANE_SHUTDOWN_TIMEOUT")); err == nil && time.Duration(*grace)*time.Second <= st {
			fail("terminationGracePeriodSeconds %d does not exceed HOOKLANE_SHUTDOWN_TIMEOUT %s: deliveries in flight would be killed", *grace, st)
		}
	}
	return errors.Join(errs...)
}

// checkContainerSecurity returns what is missing from a container's
// hardening: non-root, read-only root filesystem, no privilege
// escalation, every capability dropped, the runtime's seccomp profile.
func checkContainerSecurity(c corev1.Container, psc *corev1.PodSecurityContext) []string {
	var out []string
	sc := c.SecurityContext
	if sc == nil {
		return []string{"no securityContext"}
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil && psc != nil {
		nonRoot = psc.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		out = append(out, "runAsNonRoot is not true")
	}
	uid := sc.RunAsUser
	if uid == nil && psc != nil {
		uid = psc.RunAsUser
	}
	if uid != nil && *uid == 0 {
		out = append(out, "runs as uid 0")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		out = append(out, "readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		out = append(out, "allowPrivilegeEscalation is not false")
	}
	if sc.Privileged != nil && *sc.Privileged {
		out = append(out, "privileged")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		out = append(out, "capabilities: drop ALL and add none")
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && psc != nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type == corev1.SeccompProfileTypeUnconfined {
		out = append(out, "no seccomp profile (RuntimeDefault)")
	}
	return out
}

var envRefRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkEnv checks a container's environment: no duplicate, every
// HOOKLANE_* and OTEL_* name real, references resolvable, and the values
// the gateway parses well-formed.
func (s *objectSet) checkEnv(deployment string, c corev1.Container, names *settingNames, external []string, ports map[string]int32, volumes map[string]corev1.Volume) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("Deployment/%s: "+format, append([]any{deployment}, args...)...))
	}
	seen := map[string]bool{}
	for _, e := range c.Env {
		if seen[e.Name] {
			fail("env %s is set twice", e.Name)
		}
		if err := names.checkEnvName(e.Name); err != nil {
			fail("env %s: %v", e.Name, err)
		}
		for _, m := range envRefRE.FindAllStringSubmatch(e.Value, -1) {
			if !seen[m[1]] {
				fail("env %s refers to $(%s), not defined before it", e.Name, m[1])
			}
		}
		seen[e.Name] = true
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			if !s.has("Secret/"+ref.Name, external) {
				fail("env %s reads Secret %s, neither rendered nor declared existing", e.Name, ref.Name)
			} else if !s.secretHasKey(ref.Name, ref.Key) {
				fail("env %s reads key %q, absent from Secret %s", e.Name, ref.Key, ref.Name)
			}
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.SecretRef != nil && !s.has("Secret/"+ef.SecretRef.Name, external) {
			fail("envFrom reads Secret %s, neither rendered nor declared existing", ef.SecretRef.Name)
		}
	}
	for _, required := range []string{"HOOKLANE_LISTEN", "HOOKLANE_ROLES", "HOOKLANE_API_KEYS_FILE"} {
		if !seen[required] {
			fail("does not set %s", required)
		}
	}
	listen := envValue(c.Env, "HOOKLANE_LISTEN")
	if _, port, ok := strings.Cut(listen, ":"); !ok || port != strconv.Itoa(int(ports["http"])) {
		fail("HOOKLANE_LISTEN %q does not listen on the container port http (%d)", listen, ports["http"])
	}
	if keys := envValue(c.Env, "HOOKLANE_API_KEYS_FILE"); keys != "" && !fileMounted(keys, c.VolumeMounts, volumes) {
		fail("HOOKLANE_API_KEYS_FILE %s is not a file of a mounted Secret volume", keys)
	}
	return errs
}

// fileMounted reports whether path is an item of a Secret volume mount.
func fileMounted(path string, mounts []corev1.VolumeMount, volumes map[string]corev1.Volume) bool {
	for _, m := range mounts {
		v := volumes[m.Name]
		if v.Secret == nil {
			continue
		}
		for _, it := range v.Secret.Items {
			if strings.TrimSuffix(m.MountPath, "/")+"/"+it.Path == path {
				return true
			}
		}
	}
	return false
}

func (s *objectSet) checkService(svc *corev1.Service) error {
	ds := s.deploymentsSelectedBy(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	if len(svc.Spec.Selector) == 0 || len(ds) == 0 {
		return fmt.Errorf("Service/%s selects no Deployment's pods", svc.Name)
	}
	var errs []error
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	for _, d := range ds {
		api := slices.Contains(strings.Split(envValue(d.Spec.Template.Spec.Containers[0].Env, "HOOKLANE_ROLES"), ","), "api")
		if !headless && !api {
			errs = append(errs, fmt.Errorf("Service/%s sends API traffic to Deployment/%s, which runs no api role", svc.Name, d.Name))
		}
		ports := map[string]int32{}
		for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
			ports[p.Name] = p.ContainerPort
		}
		for _, p := range svc.Spec.Ports {
			if _, ok := resolvePort(p.TargetPort, ports); !ok {
				errs = append(errs, fmt.Errorf("Service/%s targets port %s, which Deployment/%s does not expose", svc.Name, p.TargetPort.String(), d.Name))
			}
		}
	}
	if headless && len(ds) != len(s.deployments) {
		errs = append(errs, fmt.Errorf("Service/%s (metrics) selects %d of the %d Deployments", svc.Name, len(ds), len(s.deployments)))
	}
	return errors.Join(errs...)
}

func (s *objectSet) checkHPA(h *autoscalingv2.HorizontalPodAutoscaler) error {
	ref := h.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" {
		return fmt.Errorf("HorizontalPodAutoscaler/%s scales a %s %s, want an apps/v1 Deployment", h.Name, ref.APIVersion, ref.Kind)
	}
	obj, ok := s.all["Deployment/"+ref.Name]
	if !ok {
		return fmt.Errorf("HorizontalPodAutoscaler/%s scales Deployment %s, not rendered", h.Name, ref.Name)
	}
	roles := envValue(obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env, "HOOKLANE_ROLES")
	if roles == "pollers" {
		return fmt.Errorf("HorizontalPodAutoscaler/%s scales the pollers: they do not scale with load", h.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		return fmt.Errorf("HorizontalPodAutoscaler/%s: minReplicas must be within 1..maxReplicas (%d)", h.Name, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) == 0 {
		return fmt.Errorf("HorizontalPodAutoscaler/%s has no metric", h.Name)
	}
	return nil
}

func (s *objectSet) checkServiceMonitor(m *monitoringv1.ServiceMonitor) error {
	sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
	if err != nil {
		return fmt.Errorf("ServiceMonitor/%s: selector: %w", m.Name, err)
	}
	var matched []*corev1.Service
	for _, svc := range s.services {
		if !sel.Empty() && sel.Matches(labels.Set(svc.Labels)) {
			matched = append(matched, svc)
		}
	}
	if len(matched) != 1 || matched[0].Spec.ClusterIP != corev1.ClusterIPNone {
		return fmt.Errorf("ServiceMonitor/%s selects %d Services, want the one headless metrics Service (every pod, scraped once)", m.Name, len(matched))
	}
	if !slices.Contains(m.Spec.NamespaceSelector.MatchNames, releaseNamespace) {
		return fmt.Errorf("ServiceMonitor/%s does not look in the release's namespace", m.Name)
	}
	if len(m.Spec.Endpoints) == 0 {
		return fmt.Errorf("ServiceMonitor/%s has no endpoint", m.Name)
	}
	for _, ep := range m.Spec.Endpoints {
		if ep.Path != "/metrics" {
			return fmt.Errorf("ServiceMonitor/%s scrapes %q, want /metrics", m.Name, ep.Path)
		}
		if !slices.ContainsFunc(matched[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
			return fmt.Errorf("ServiceMonitor/%s scrapes port %q, not a port of Service/%s", m.Name, ep.Port, matched[0].Name)
		}
	}
	return nil
}

// keyEntryRE is a keys file line as the gateway parses it: a name, a role,
// a non-empty key.
var keyEntryRE = regexp.MustCompile(`^[^:#\s][^:]*:(admin|producer|worker|viewer):.*\S.*$`)

// checkSecret checks the contents the gateway parses: the keys file.
func checkSecret(sec *corev1.Secret) error {
	keys, ok := sec.StringData["api-keys"]
	if !ok {
		return nil
	}
	n := 0
	for line := range strings.SplitSeq(keys, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !keyEntryRE.MatchString(line) {
			return fmt.Errorf("Secret/%s: api-keys line %d is not name:role:key", sec.Name, n+1)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("Secret/%s: api-keys holds no key", sec.Name)
	}
	return nil
}

// secretHasKey reports whether a rendered Secret has key; a Secret from
// outside the chart is assumed to.
func (s *objectSet) secretHasKey(name, key string) bool {
	for _, sec := range s.secrets {
		if sec.Name == name {
			_, a := sec.StringData[key]
			_, b := sec.Data[key]
			return a || b
		}
	}
	return true
}

func (s *objectSet) deploymentsSelectedBy(ls *metav1.LabelSelector) []*appsv1.Deployment {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range s.deployments {
		if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d)
		}
	}
	return out
}

func resolvePort(p intstr.IntOrString, named map[string]int32) (int32, bool) {
	if p.Type == intstr.String {
		n, ok := named[p.StrVal]
		return n, ok
	}
	for _, n := range named {
		if n == p.IntVal {
			return n, true
		}
	}
	return 0, false
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
