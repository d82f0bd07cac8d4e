{{/* <release>-tuneplane, or the release's name where it says tuneplane already (release
"tuneplane": deploy/tuneplane-ingest). */}}
{{- define "tuneplane.fullname" -}}
{{- if contains "tuneplane" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-tuneplane" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tuneplane.secretName" -}}
{{- default (printf "%s-secrets" (include "tuneplane.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{- define "tuneplane.databaseSecret" -}}
{{- default (printf "%s-database" (include "tuneplane.fullname" .)) .Values.database.existingSecret -}}
{{- end -}}

{{/* Labels on every pod of this release, and nobody else's (NetworkPolicy selectors). */}}
{{- define "tuneplane.podLabels" -}}
app.kubernetes.io/name: tuneplane
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tuneplane.labels" -}}
{{ include "tuneplane.podLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "tuneplane.image" -}}
{{ .root.Values.image.repository }}-{{ .target }}:{{ .root.Values.image.tag }}
{{- end -}}

{{/* Settings every service reads; the database URL (its password) and the two shared
secrets come from Secrets, never from a value in the pod spec. */}}
{{- define "tuneplane.env" -}}
- name: TUNEPLANE_DATABASE_URL
  valueFrom: {secretKeyRef: {name: {{ include "tuneplane.databaseSecret" . }}, key: url}}
- name: TUNEPLANE_KAFKA_BOOTSTRAP
  value: {{ .Values.kafka.bootstrap | quote }}
- name: TUNEPLANE_TOPIC_REPLICATION
  value: {{ .Values.kafka.topicReplication | quote }}
- name: TUNEPLANE_TOPIC_MIN_INSYNC
  value: {{ .Values.kafka.topicMinInsync | quote }}
- name: TUNEPLANE_TOPIC_PARTITIONS
  value: {{ .Values.kafka.topicPartitions | quote }}
- name: TUNEPLANE_S3_ENDPOINT
  value: {{ .Values.s3.endpoint | quote }}
- name: TUNEPLANE_S3_BUCKET
  value: {{ .Values.s3.bucket | quote }}
- name: TUNEPLANE_GATEWAY_HOSTNAME
  value: {{ .Values.gateway.hostname | quote }}
- name: TUNEPLANE_TELEMETRY_DRAIN_SECONDS
  value: {{ .Values.gateway.drainSeconds | quote }}
- name: TUNEPLANE_SECRET_ENC_KEY
  valueFrom: {secretKeyRef: {name: {{ include "tuneplane.secretName" . }}, key: TUNEPLANE_SECRET_ENC_KEY}}
- name: TUNEPLANE_WEB_JWT_SECRET
  valueFrom: {secretKeyRef: {name: {{ include "tuneplane.secretName" . }}, key: TUNEPLANE_WEB_JWT_SECRET}}
{{- if .Values.gateway.tlsSecret }}
- name: TUNEPLANE_TELEMETRY_TRUST_BUNDLE
  value: /etc/tuneplane/tls/ca.crt
{{- end }}
{{- end -}}

{{- define "tuneplane.envFrom" -}}
{{- if .Values.s3.credentialsSecret }}
envFrom:
  - secretRef: {name: {{ .Values.s3.credentialsSecret }}}
{{- end }}
{{- end -}}

{{- define "tuneplane.pod" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  fsGroup: 10001
{{- end -}}

{{/* The tuneplane.dev/release label value of the TelemetryDestinations this release composes
(destinations.release, or <namespace>.<release>): a label value, or the chart refuses. */}}
{{- define "tuneplane.destinationsRelease" -}}
{{- $value := default (printf "%s.%s" .Release.Namespace .Release.Name) .Values.destinations.release -}}
{{- if not (regexMatch "^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$" $value) -}}
{{- fail (printf "destinations.release: %q is not a label value (at most 63 characters: letters, digits, -, _ and .); give destinations.release, unique in the cluster" $value) -}}
{{- end -}}
{{- $value -}}
{{- end -}}

{{/* destinations.sinkSecretPrefix, refused when a Secret of the release's starts with it
(a TelemetryDestination's sink could then send it to any endpoint). */}}
{{- define "tuneplane.sinkSecretPrefix" -}}
{{- $prefix := .Values.destinations.sinkSecretPrefix -}}
{{- if not (regexMatch "^[a-z0-9][-a-z0-9]{0,61}$" $prefix) -}}
{{- fail (printf "destinations.sinkSecretPrefix: %q does not start a Secret's name (lower-case letters, digits and -)" $prefix) -}}
{{- end -}}
{{- $own := list (include "tuneplane.secretName" .) (include "tuneplane.databaseSecret" .) (printf "%s-destinations-webhook" (include "tuneplane.fullname" .)) .Values.s3.credentialsSecret .Values.gateway.tlsSecret .Values.web.tlsSecret -}}
{{- range $secret := $own -}}
{{- if and $secret (hasPrefix $prefix $secret) -}}
{{- fail (printf "destinations.sinkSecretPrefix: the release's Secret %q starts with %q, so a TelemetryDestination's sink could send it anywhere; choose another prefix" $secret $prefix) -}}
{{- end -}}
{{- end -}}
{{- $prefix -}}
{{- end -}}

{{/* A component's metrics port (metrics.ports), or nothing where metrics are off or its port
is 0. Called with (dict "root" $ "component" NAME). */}}
{{- define "tuneplane.metricsPort" -}}
{{- if .root.Values.metrics.enabled -}}
{{- $port := index .root.Values.metrics.ports .component | default 0 | int -}}
{{- if $port }}{{ $port }}{{ end -}}
{{- end -}}
{{- end -}}

{{/* The components the release runs that serve metrics, with their ports: a JSON object
(fromJson), empty where metrics are off. */}}
{{- define "tuneplane.metricsPorts" -}}
{{- $components := list "projector" -}}
{{- if .Values.gateway.enabled }}{{ $components = concat $components (list "ingest" "control") }}{{ end -}}
{{- if .Values.web.enabled }}{{ $components = append $components "web" }}{{ end -}}
{{- if .Values.exporter.enabled }}{{ $components = append $components "exporter" }}{{ end -}}
{{- $ports := dict -}}
{{- range $component := $components -}}
{{- with include "tuneplane.metricsPort" (dict "root" $ "component" $component) -}}
{{- $_ := set $ports $component (int .) -}}
{{- end -}}
{{- end -}}
{{- toJson $ports -}}
{{- end -}}

{{/* A pod's scrape annotations, for its metrics port (the argument). */}}
{{- define "tuneplane.scrapeAnnotations" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ . | quote }}
prometheus.io/path: /metrics
{{- end -}}

{{/* The setting a component's metrics port is given in: (dict "component" NAME "port"
PORT). */}}
{{- define "tuneplane.metricsEnv" -}}
- name: TUNEPLANE_{{ upper .component }}_METRICS_PORT
  value: {{ .port | quote }}
{{- end -}}

{{/* The container port named metrics, for a metrics port (the argument). */}}
{{- define "tuneplane.metricsContainerPort" -}}
- name: metrics
  containerPort: {{ . }}
  protocol: TCP
{{- end -}}

{{/* "true" where a label selector (the argument) narrows: a label it must have, or an
expression "In" some values (Exists, NotIn, DoesNotExist and an empty one take almost any). */}}
{{- define "tuneplane.narrows" -}}
{{- $narrow := false -}}
{{- if . -}}
{{- if .matchLabels }}{{ $narrow = true }}{{ end -}}
{{- range $e := (.matchExpressions | default list) -}}
{{- if and (eq $e.operator "In") $e.values }}{{ $narrow = true }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $narrow -}}
{{- end -}}

{{/* metrics.scrapers, refused unless each peer names the scrapers' namespace(s) (a
namespaceSelector that narrows): a peer of any namespace, of the release's own namespace
alone (tenants' launches may run there) or an ipBlock (on most network plugins it matches
pod addresses too) could take tenants' launch pods. */}}
{{- define "tuneplane.scrapers" -}}
{{- range $peer := .Values.metrics.scrapers -}}
{{- if or (not $peer) (hasKey $peer "ipBlock") (ne (include "tuneplane.narrows" $peer.namespaceSelector) "true") -}}
{{- fail (printf "metrics.scrapers: %s admits every pod of every namespace or of the release's (tenants' launch pods too), or addresses; name the scrapers' namespace with a namespaceSelector (matchLabels, or matchExpressions In)" (toJson $peer)) -}}
{{- end -}}
{{- end -}}
{{- toYaml .Values.metrics.scrapers -}}
{{- end -}}
