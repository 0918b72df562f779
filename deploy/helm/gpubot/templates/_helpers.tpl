{{/* The release's base name: the release name when it already says gpubot, else <release>-gpubot. */}}
{{- define "gpubot.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 56 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 56 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the bot's pods. Never add a label that changes between chart versions:
     a Deployment's selector is immutable, and `helm upgrade` would fail. */}}
{{- define "gpubot.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: bot
{{- end -}}

{{- define "gpubot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpubot
{{- end -}}

{{- define "gpubot.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Where the pod mounts what; the settings point here. */}}
{{- define "gpubot.paths" -}}
config: /etc/gpubot/config/config.yaml
runbooks: /etc/gpubot/runbooks
slack: /etc/gpubot/slack
ssh: /etc/gpubot/ssh
kubeconfigs: /etc/gpubot/kubeconfigs
state: /var/lib/gpubot/state.db
{{- end -}}

{{/* The settings file: the user's `config`, plus dry_run from remediation.enabled unless set. */}}
{{- define "gpubot.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- if not (hasKey $config "dry_run") -}}
{{- $_ := set $config "dry_run" (not .Values.remediation.enabled) -}}
{{- else if and (not $config.dry_run) (not .Values.remediation.enabled) -}}
{{- fail "config.dry_run: false needs remediation.enabled: true (without the remediation role the cluster refuses every fix)" -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{- define "gpubot.pvcName" -}}
{{- .Values.persistence.existingClaim | default (printf "%s-state" (include "gpubot.fullname" .)) -}}
{{- end -}}
