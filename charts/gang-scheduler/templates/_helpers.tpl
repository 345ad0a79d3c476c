{{/* Names, labels and derived values shared by the templates. */}}

{{- define "gang-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name, or release-chart when the release name lacks the chart name. */}}
{{- define "gang-scheduler.fullname" -}}
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

{{- define "gang-scheduler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gang-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gang-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gang-scheduler.labels" -}}
helm.sh/chart: {{ include "gang-scheduler.chart" . }}
{{ include "gang-scheduler.selectorLabels" . }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gang-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gang-scheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The leader Lease's namespace: config.leaseNamespace, else the release namespace. */}}
{{- define "gang-scheduler.leaseNamespace" -}}
{{- default .Release.Namespace .Values.config.leaseNamespace }}
{{- end }}

{{/* The TCP port of config.bindAddress ("host:port", "[::]:port"). */}}
{{- define "gang-scheduler.port" -}}
{{- $port := regexFind "[0-9]+$" .Values.config.bindAddress }}
{{- if not $port }}
{{- fail (printf "config.bindAddress %q must end in :PORT" .Values.config.bindAddress) }}
{{- end }}
{{- $port }}
{{- end }}

{{- define "gang-scheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
Value of the GANG_SCHEDULER_<NAME> variable for one setting: strings as they are, everything
else as JSON (lists as pydantic-settings expects them, numbers without exponent notation).
*/}}
{{- define "gang-scheduler.settingValue" -}}
{{- if kindIs "string" . }}{{ . }}{{ else }}{{ toJson . }}{{ end }}
{{- end }}

{{/* Combinations the schema cannot express; rendering fails with the reason. */}}
{{- define "gang-scheduler.validate" -}}
{{- $c := .Values.config }}
{{- if and (not $c.leaderElect) (gt (int .Values.replicaCount) 1) }}
{{- fail "config.leaderElect=false with replicaCount > 1 would let several schedulers bind at once: set replicaCount to 1 or keep leader election on" }}
{{- end }}
{{- if and $c.leaderElect (not (and (gt (float64 $c.leaseDurationS) (float64 $c.renewDeadlineS)) (gt (float64 $c.renewDeadlineS) (float64 $c.retryPeriodS)))) }}
{{- fail "config: leaseDurationS > renewDeadlineS > retryPeriodS is required with leaderElect (the scheduler refuses to start otherwise)" }}
{{- end }}
{{- if lt (float64 $c.backoffMaxS) (float64 $c.backoffInitialS) }}
{{- fail "config: backoffMaxS >= backoffInitialS is required (the scheduler refuses to start otherwise)" }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled .Values.podMonitor.enabled }}
{{- fail "enable serviceMonitor or podMonitor, not both: Prometheus would scrape every series twice" }}
{{- end }}
{{- end }}

{{/* The operator's objects (Deployment, Service, ServiceAccount, RBAC, webhook configurations). */}}
{{- define "gang-scheduler.operatorName" -}}
{{- printf "%s-operator" (include "gang-scheduler.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The operator's webhook configurations: kopf names each webhook "<handler>.<configuration>", and the API server
wants webhook names of at least three dot-separated segments, so the configuration name carries a domain.
*/}}
{{- define "gang-scheduler.webhookConfigurationName" -}}
{{- printf "%s.gang-scheduler.io" (include "gang-scheduler.operatorName" .) }}
{{- end }}

{{- define "gang-scheduler.operatorSelectorLabels" -}}
app.kubernetes.io/name: {{ include "gang-scheduler.name" . }}-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gang-scheduler.operatorLabels" -}}
helm.sh/chart: {{ include "gang-scheduler.chart" . }}
{{ include "gang-scheduler.operatorSelectorLabels" . }}
app.kubernetes.io/component: operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
