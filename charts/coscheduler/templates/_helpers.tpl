{{/* The chart's name, or nameOverride. */}}
{{- define "coscheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name when
it contains the chart's name (release "coscheduler" gives "coscheduler"), else
<release>-<name>. Also the Lease's name, so two releases never share a Lease.
*/}}
{{- define "coscheduler.fullname" -}}
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

{{/* What selects the release's pods (Deployment, Service, PodDisruptionBudget). */}}
{{- define "coscheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object: the selector's and Helm's bookkeeping. */}}
{{- define "coscheduler.labels" -}}
{{ include "coscheduler.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "coscheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "coscheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The flags of `coscheduler run`, one per line, from the values (README,
"Settings"). Integers go through `int` so that large ones are not printed
in float notation (1e+06), which an integer flag refuses.
*/}}
{{- define "coscheduler.args" -}}
- run
- --scheduler-name={{ .Values.schedulerName }}
{{- range .Values.namespaces }}
- --namespace={{ . }}
{{- end }}
- --score-strategy={{ .Values.scoreStrategy }}
- --preemption={{ .Values.preemption }}
- --usage-half-life-seconds={{ .Values.usageHalfLifeSeconds }}
{{- with .Values.kueueQueue }}
- --kueue-queue={{ . }}
{{- end }}
- --volume-bind-timeout-seconds={{ .Values.volumeBindTimeoutSeconds }}
- --event-interval-seconds={{ .Values.eventIntervalSeconds }}
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
- --event-loop={{ .Values.eventLoop }}
- --qps={{ .Values.client.qps }}
- --burst={{ .Values.client.burst | int64 }}
- --bind-concurrency={{ .Values.client.bindConcurrency | int64 }}
- --request-timeout-seconds={{ .Values.client.requestTimeoutSeconds }}
- --watch-timeout-seconds={{ .Values.client.watchTimeoutSeconds | int64 }}
- --backoff-initial-seconds={{ .Values.backoff.initialSeconds }}
- --backoff-max-seconds={{ .Values.backoff.maxSeconds }}
- --unschedulable-flush-seconds={{ .Values.backoff.unschedulableFlushSeconds }}
- --gather-seconds={{ .Values.backoff.gatherSeconds }}
{{- if .Values.leaderElection.enabled }}
- --leader-elect
- --lease-name={{ include "coscheduler.fullname" . }}
- --lease-namespace={{ .Release.Namespace }}
- --lease-duration-seconds={{ .Values.leaderElection.leaseDurationSeconds }}
- --renew-deadline-seconds={{ .Values.leaderElection.renewDeadlineSeconds }}
- --retry-period-seconds={{ .Values.leaderElection.retryPeriodSeconds }}
{{- else }}
- --no-leader-elect
{{- end }}
- --metrics-port={{ .Values.metrics.port | int64 }}
{{- if .Values.dashboard.enabled }}
- --dashboard
- --dashboard-address={{ .Values.dashboard.address }}
- --dashboard-port={{ .Values.dashboard.port | int64 }}
{{- end }}
{{- if .Values.webhook.enabled }}
- --webhook-port={{ .Values.webhook.port | int64 }}
- --webhook-cert-dir=/etc/coscheduler/webhook
{{- end }}
{{- end }}
