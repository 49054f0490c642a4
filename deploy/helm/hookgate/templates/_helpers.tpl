{{/* The chart's name, and the name of its objects. */}}
{{- define "hookgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookgate.fullname" -}}
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

{{- define "hookgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hookgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels that select the nodes. Their pods also carry
app.kubernetes.io/component: node, which the migration Job's pod does not,
so that neither the Service nor the PodDisruptionBudget counts it.
*/}}
{{- define "hookgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hookgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The config's database, with hookgate's default when it sets none. */}}
{{- define "hookgate.database" -}}
{{- (.Values.config | default dict).database | default "sqlite:hookgate.db" }}
{{- end }}

{{/* "true" when the inbox is PostgreSQL (several nodes), empty for SQLite. */}}
{{- define "hookgate.postgres" -}}
{{- $db := include "hookgate.database" . }}
{{- if or (hasPrefix "postgres://" $db) (hasPrefix "postgresql://" $db) }}true{{ end }}
{{- end }}

{{/* The host and port of a listen address, host:port. */}}
{{- define "hookgate.listenHost" -}}
{{- regexReplaceAll ":[^:]*$" . "" }}
{{- end }}

{{- define "hookgate.listenPort" -}}
{{- regexReplaceAll "^.*:" . "" }}
{{- end }}

{{/* The public listen address, with hookgate's default. */}}
{{- define "hookgate.listen" -}}
{{- (.Values.config | default dict).listen | default "127.0.0.1:8080" }}
{{- end }}

{{/* "true" when the config's admin listener is reachable from outside the pod. */}}
{{- define "hookgate.adminExposed" -}}
{{- $admin := (.Values.config | default dict).admin | default dict }}
{{- if and $admin.listen (has (include "hookgate.listenHost" $admin.listen) (list "" "0.0.0.0" "::" "[::]")) }}true{{ end }}
{{- end }}

{{/* The node's working directory and data volume, the image's. */}}
{{- define "hookgate.dataDir" -}}/var/lib/hookgate{{- end }}

{{/*
The directory of the spool file when it needs a volume of its own: set,
and neither in the data directory nor in /tmp. A relative path is taken
from the working directory, the data directory.
*/}}
{{- define "hookgate.spoolDir" -}}
{{- $spool := ((.Values.config | default dict).dedupe | default dict).spool | default "" }}
{{- if and $spool (hasPrefix "/" $spool) }}
{{- $dir := dir $spool }}
{{- if not (or (hasPrefix (include "hookgate.dataDir" .) $dir) (hasPrefix "/tmp" $dir)) }}{{ $dir }}{{ end }}
{{- end }}
{{- end }}

{{/*
The Secret and key a ServiceMonitor sends as /metrics' bearer token:
serviceMonitor.tokenSecret, or existingSecret's key NAME when
metrics.token is env:NAME. Empty when /metrics needs no token.
*/}}
{{- define "hookgate.metricsTokenSecret" -}}
{{- $token := ((.Values.config | default dict).metrics | default dict).token | default "" }}
{{- if .Values.serviceMonitor.tokenSecret.name }}
{{- toYaml .Values.serviceMonitor.tokenSecret }}
{{- else if hasPrefix "env:" $token }}
name: {{ .Values.existingSecret }}
key: {{ trimPrefix "env:" $token }}
{{- else if $token }}
{{- fail (printf "serviceMonitor.enabled and config.metrics.token is %s: set serviceMonitor.tokenSecret (name, key) to the Secret the scrape sends as its bearer token" $token) }}
{{- end }}
{{- end }}

{{/*
hookgate.checkRef fails the render when a secret field of the config
holds a value rather than a reference: the ConfigMap is readable by
whoever may read the namespace's config, and the chart keeps no secret.
*/}}
{{- define "hookgate.checkRef" -}}
{{- if kindIs "slice" .value }}
{{- range $i, $v := .value }}
{{- include "hookgate.checkRef" (dict "field" (printf "%s[%d]" $.field $i) "value" $v) }}
{{- end }}
{{- else if .value }}
{{- $v := toString .value }}
{{- if not (or (hasPrefix "env:" $v) (hasPrefix "file:" $v)) }}
{{- fail (printf "%s must be a reference (env:NAME or file:PATH), not a value: the chart keeps no secret in its ConfigMap" .field) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
hookgate.validate fails the render, with a message that says what to
change, for values that cannot work in a cluster. hookgate itself checks
the rest when it starts (`hookgate check-config`).
*/}}
{{- define "hookgate.validate" -}}
{{- $c := .Values.config | default dict }}
{{- $db := include "hookgate.database" . }}
{{- $listen := include "hookgate.listen" . }}
{{- if not (has (include "hookgate.listenHost" $listen) (list "" "0.0.0.0" "::" "[::]")) }}
{{- fail (printf "config.listen %s: listen on every interface (0.0.0.0:PORT): neither the kubelet's probes nor the Service reach another address of the pod" $listen) }}
{{- end }}
{{- if not (include "hookgate.postgres" .) }}
{{- if .Values.autoscaling.enabled }}
{{- fail (printf "SQLite (config.database %s) runs on one node: autoscaling needs PostgreSQL (a postgres:// database)" $db) }}
{{- end }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- fail (printf "SQLite (config.database %s) runs on one node: set replicaCount: 1, or use a postgres:// database for more" $db) }}
{{- end }}
{{- $path := trimPrefix "sqlite:" $db }}
{{- if and (hasPrefix "/" $path) (not (hasPrefix (printf "%s/" (include "hookgate.dataDir" .)) $path)) }}
{{- fail (printf "config.database %s: keep the SQLite file under %s, the node's data volume (the root file system is read-only)" $db (include "hookgate.dataDir" .)) }}
{{- end }}
{{- end }}
{{- if .Values.persistence.enabled }}
{{- if .Values.autoscaling.enabled }}
{{- fail "persistence.enabled with autoscaling: one volume cannot hold several nodes' files (a SQLite database has one node, a spool file is one node's)" }}
{{- end }}
{{- if gt (int .Values.replicaCount) 1 }}
{{- fail (printf "persistence.enabled with %d replicas: one volume cannot hold several nodes' files (a SQLite database has one node, a spool file is one node's)" (int .Values.replicaCount)) }}
{{- end }}
{{- end }}
{{- range $field := list "database" "database_session" }}
{{- $url := get $c $field | default "" | toString }}
{{- if or (regexMatch "^postgres(ql)?://[^/@]*:[^/@]*@" $url) (regexMatch "[?&]password=" $url) }}
{{- fail (printf "config.%s holds a password: put it in the existing Secret as PGPASSWORD (pgx reads it), not in the ConfigMap" $field) }}
{{- end }}
{{- end }}
{{- $admin := $c.admin | default dict }}
{{- $metrics := $c.metrics | default dict }}
{{- include "hookgate.checkRef" (dict "field" "config.admin.token" "value" $admin.token) }}
{{- include "hookgate.checkRef" (dict "field" "config.metrics.token" "value" $metrics.token) }}
{{- range $i, $s := $c.sources | default list }}
{{- $f := printf "config.sources[%d]" $i }}
{{- include "hookgate.checkRef" (dict "field" (printf "%s.secret" $f) "value" $s.secret) }}
{{- include "hookgate.checkRef" (dict "field" (printf "%s.token" $f) "value" $s.token) }}
{{- range $j, $d := $s.destinations | default list }}
{{- include "hookgate.checkRef" (dict "field" (printf "%s.destinations[%d].secret" $f $j) "value" $d.secret) }}
{{- end }}
{{- end }}
{{- $refs := regexFindAll "env:[A-Za-z_][A-Za-z0-9_]*" (toYaml $c) -1 }}
{{- if and $refs (not .Values.existingSecret) }}
{{- fail (printf "config names %s: set existingSecret to the Secret that holds it" (first $refs)) }}
{{- end }}
{{- if .Values.serviceMonitor.enabled }}
{{- if not (or $admin.listen $metrics.token $metrics.public) }}
{{- fail "serviceMonitor.enabled, but the config serves no /metrics: set config.admin.listen, config.metrics.token or config.metrics.public" }}
{{- end }}
{{- if and $admin.listen (not (include "hookgate.adminExposed" .)) }}
{{- fail (printf "serviceMonitor.enabled, but /metrics is on config.admin.listen %s, which only the pod itself reaches" $admin.listen) }}
{{- end }}
{{- end }}
{{- end }}

{{/* What every hookgate pod of the chart runs with: the image's uid 65532, never root. */}}
{{- define "hookgate.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "hookgate.containerSecurityContext" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop:
    - ALL
{{- end }}

{{/*
The environment of the nodes and the migration Job: the config's path,
and every key of existingSecret, by reference.
*/}}
{{- define "hookgate.env" -}}
env:
  - name: HOOKGATE_CONFIG
    value: /etc/hookgate/hookgate.yaml
{{- with .Values.existingSecret }}
envFrom:
  - secretRef:
      name: {{ . }}
{{- end }}
{{- end }}
