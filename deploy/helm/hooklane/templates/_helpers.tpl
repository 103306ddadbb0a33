{{/* Chart name, at most 63 characters. */}}
{{- define "hooklane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already holds the chart name. */}}
{{- define "hooklane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hooklane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "hooklane.labels" -}}
helm.sh/chart: {{ include "hooklane.chart" . }}
{{ include "hooklane.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select every hooklane pod of the release. */}}
{{- define "hooklane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hooklane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hooklane.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hooklane.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The components (Deployments) of the topology, as a YAML list. */}}
{{- define "hooklane.components" -}}
{{- if eq .Values.topology "combined" }}
- combined
{{- else }}
- api
- router
- pollers
{{- end }}
{{- end }}

{{/* The HOOKLANE_ROLES of a component. */}}
{{- define "hooklane.roles" -}}
{{- if eq . "combined" }}api,router,pollers{{ else }}{{ . }}{{ end }}
{{- end }}

{{/* Whether a component serves the HTTP API (and so the Service). */}}
{{- define "hooklane.servesAPI" -}}
{{- if or (eq . "api") (eq . "combined") }}true{{ end }}
{{- end }}

{{/* The Secret the chart renders, when it renders one. */}}
{{- define "hooklane.secretName" -}}
{{- include "hooklane.fullname" . }}
{{- end }}

{{/* Whether the chart renders its own Secret. */}}
{{- define "hooklane.ownSecret" -}}
{{- if or (and .Values.apiKeys.entries (not .Values.apiKeys.existingSecret)) (and .Values.encryptionKey.value (not .Values.encryptionKey.existingSecret)) (and .Values.mongodb.uri (not .Values.mongodb.existingSecret)) }}true{{ end }}
{{- end }}

{{/* Environment variable names the chart sets itself. */}}
{{- define "hooklane.managedEnv" -}}
- HOOKLANE_LISTEN
- HOOKLANE_ROLES
- HOOKLANE_DATA_DIR
- HOOKLANE_MONGO_URI
- HOOKLANE_MONGO_DATABASE
- HOOKLANE_SQS_QUEUE_URL
- HOOKLANE_SQS_REGION
- HOOKLANE_SQS_ENDPOINT
- HOOKLANE_API_KEYS
- HOOKLANE_API_KEYS_FILE
- HOOKLANE_ENCRYPTION_KEY
- HOOKLANE_SHUTDOWN_TIMEOUT
{{- end }}

{{/*
Validates the values as a whole; fails the render with the reason. Called
once from the Deployment template.
*/}}
{{- define "hooklane.validate" -}}
{{- $v := .Values }}
{{- if not (has $v.topology (list "split" "combined")) }}
{{- fail (printf "topology must be split or combined, not %q" $v.topology) }}
{{- end }}
{{- if not (or $v.apiKeys.entries $v.apiKeys.existingSecret) }}
{{- fail "API keys are required: hooklane refuses to listen on a pod address without them. Set apiKeys.entries (name:role:key) or apiKeys.existingSecret" }}
{{- end }}
{{- $names := list }}
{{- range $v.apiKeys.entries }}
{{- /* As the gateway parses a keys file line: a name (no colon, not a # comment), a role, a non-empty key. */}}
{{- if not (regexMatch "^[^:#\\s][^:\\n]*:(admin|producer|worker|viewer):[^\\n]*[^\\s][^\\n]*$" .) }}
{{- fail "every apiKeys.entries item must be name:role:key on one line, with a role of admin, producer, worker or viewer (the value is not shown)" }}
{{- end }}
{{- $names = append $names (regexReplaceAll ":.*" . "") }}
{{- end }}
{{- if ne (len $names) (len (uniq $names)) }}
{{- fail "apiKeys.entries names a key twice: each name must be unique" }}
{{- end }}
{{- with $v.encryptionKey.value }}
{{- if not (regexMatch "^[A-Za-z0-9+/]{43}=$" .) }}
{{- fail "encryptionKey.value must be the base64 of 32 bytes (openssl rand -base64 32)" }}
{{- end }}
{{- end }}
{{- $mongo := or $v.mongodb.uri $v.mongodb.existingSecret }}
{{- if $v.embedded.enabled }}
{{- if or $mongo $v.sqs.queueUrl }}
{{- fail "embedded.enabled runs on the embedded store and the in-process queue: unset mongodb.uri, mongodb.existingSecret and sqs.queueUrl" }}
{{- end }}
{{- if or (ne $v.topology "combined") (ne (int $v.combined.replicaCount) 1) $v.combined.autoscaling.enabled }}
{{- fail "embedded.enabled needs a single pod: topology: combined, combined.replicaCount: 1, combined.autoscaling.enabled: false" }}
{{- end }}
{{- else }}
{{- if not $mongo }}
{{- fail "MongoDB is required: set mongodb.uri or mongodb.existingSecret (or embedded.enabled for a single-pod trial)" }}
{{- end }}
{{- if not $v.sqs.queueUrl }}
{{- fail "an SQS FIFO queue is required: set sqs.queueUrl (or embedded.enabled for a single-pod trial)" }}
{{- end }}
{{- end }}
{{- $managed := include "hooklane.managedEnv" . | fromYamlArray }}
{{- range $c := concat (list "") (include "hooklane.components" . | fromYamlArray) }}
{{- $env := ternary $v.env (index $v (default "api" $c)).env (eq $c "") }}
{{- range $name, $_ := $env }}
{{- if has $name $managed }}
{{- fail (printf "%s is set by the chart: use its value (see values.yaml), not env" $name) }}
{{- end }}
{{- if not (hasPrefix "HOOKLANE_" $name) }}
{{- fail (printf "env holds HOOKLANE_* settings only, not %s: use extraEnv" $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $_ := $v.tracing.env }}
{{- if not (hasPrefix "OTEL_" $name) }}
{{- fail (printf "tracing.env holds OTEL_* variables only, not %s" $name) }}
{{- end }}
{{- if has $name (list "OTEL_EXPORTER_OTLP_ENDPOINT" "OTEL_SERVICE_NAME" "OTEL_RESOURCE_ATTRIBUTES" "OTEL_TRACES_SAMPLER" "OTEL_TRACES_SAMPLER_ARG") }}
{{- fail (printf "%s is set by the chart from tracing.endpoint, serviceName, sampler and samplerArg: not in tracing.env" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment of a component's container; the argument is a dict of root and component. */}}
{{- define "hooklane.env" -}}
{{- $ := .root }}
{{- $v := $.Values }}
{{- $c := .component }}
- name: HOOKLANE_LISTEN
  value: {{ printf "0.0.0.0:%d" (int $v.containerPort) | quote }}
- name: HOOKLANE_ROLES
  value: {{ include "hooklane.roles" $c | quote }}
- name: HOOKLANE_SHUTDOWN_TIMEOUT
  value: {{ $v.shutdownTimeout | quote }}
- name: HOOKLANE_API_KEYS_FILE
  value: /etc/hooklane/keys/api-keys
{{- if $v.embedded.enabled }}
- name: HOOKLANE_DATA_DIR
  value: /data
{{- else }}
- name: HOOKLANE_MONGO_URI
  valueFrom:
    secretKeyRef:
      name: {{ default (include "hooklane.secretName" $) $v.mongodb.existingSecret }}
      key: {{ ternary $v.mongodb.existingSecretKey "mongo-uri" (not (empty $v.mongodb.existingSecret)) }}
- name: HOOKLANE_MONGO_DATABASE
  value: {{ $v.mongodb.database | quote }}
- name: HOOKLANE_SQS_QUEUE_URL
  value: {{ $v.sqs.queueUrl | quote }}
{{- with $v.sqs.region }}
- name: HOOKLANE_SQS_REGION
  value: {{ . | quote }}
{{- end }}
{{- with $v.sqs.endpoint }}
- name: HOOKLANE_SQS_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if or $v.encryptionKey.value $v.encryptionKey.existingSecret }}
- name: HOOKLANE_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ default (include "hooklane.secretName" $) $v.encryptionKey.existingSecret }}
      key: {{ ternary $v.encryptionKey.existingSecretKey "encryption-key" (not (empty $v.encryptionKey.existingSecret)) }}
{{- end }}
{{- with $v.aws.region }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- range $name, $value := $v.env }}
{{- if not (hasKey (index $v $c).env $name) }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- range $name, $value := (index $v $c).env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- with $v.tracing.endpoint }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ $v.tracing.serviceName | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME),hooklane.component=%s" $c | quote }}
{{- with $v.tracing.sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ . | quote }}
{{- end }}
{{- with $v.tracing.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | toString | quote }}
{{- end }}
{{- range $name, $value := $v.tracing.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* A component's value, falling back to the top-level default. */}}
{{- define "hooklane.pick" -}}
{{- $own := index .component .key }}
{{- if $own }}{{ toYaml $own }}{{ else }}{{ with index .root.Values .key }}{{ toYaml . }}{{ end }}{{ end }}
{{- end }}
