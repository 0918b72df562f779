{{/* The release's base name: fullnameOverride; else the release name when it already says the
     name (nameOverride, or gpubot), else <release>-<name>. 56 characters leave room for the
     longest suffix (-actuator). Names only: labels keep the chart's name (see gpubot.labelsFor). */}}
{{- define "gpubot.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 56 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 56 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 56 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The bot's ServiceAccount: serviceAccount.name, else the release's base name (created by the
     chart with serviceAccount.create, else one you made); every role binds to it. */}}
{{- define "gpubot.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "gpubot.fullname" .) -}}
{{- end -}}

{{/* Labels that select the bot's pods. Never add a label that changes between chart versions:
     a Deployment's selector is immutable, and `helm upgrade` would fail. */}}
{{- define "gpubot.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: bot
{{- end -}}

{{- define "gpubot.labels" -}}
{{ include "gpubot.labelsFor" (list . .Chart.Name) }}
{{- end -}}

{{/* The labels of one part of the release, called as (list . NAME): NAME is the part's
     app.kubernetes.io/name (gpubot, gpubot-node, gpubot-actuator); the bot finds its node agents
     by it (bot/probes/node_agent.py), so it never carries the release name. */}}
{{- define "gpubot.labelsFor" -}}
{{- $ctx := index . 0 -}}
helm.sh/chart: {{ printf "%s-%s" $ctx.Chart.Name $ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ $ctx.Release.Name }}
app.kubernetes.io/version: {{ $ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $ctx.Release.Service }}
app.kubernetes.io/part-of: gpubot
{{- end -}}

{{/* Pod placement of the per-node DaemonSets: GPU nodes only (the labels bot/kube/gpu.py counts
     as GPU machines, each its own nodeSelectorTerm so any one of them selects the node, plus
     gpuNodes.extraNodeSelectorTerms), tolerating the GPU taints of daemonsets.tolerations, at
     daemonsets.priorityClassName.
     Cordoned and NotReady nodes are tolerated by the DaemonSet controller itself. */}}
{{- define "gpubot.gpuNodePlacement" -}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        {{- include "gpubot.gpuNodeTerms" . | nindent 8 }}
        {{- with .Values.gpuNodes.extraNodeSelectorTerms }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- with .Values.daemonsets.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.daemonsets.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{/* A Role in the release namespace with exec into its pods, bound to the bot; called as
     (list . NAME-SUFFIX WHY). RBAC cannot tell pods apart by label, so any such Role reaches every
     pod in the release namespace: keep nothing but gpubot there. */}}
{{- define "gpubot.execRole" -}}
{{- $ctx := index . 0 -}}
{{- $name := printf "%s-%s" (include "gpubot.fullname" $ctx) (index . 1) -}}
# {{ index . 2 }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "gpubot.labels" $ctx | nindent 4 }}
rules:
  # find the pod on the target node (by label and spec.nodeName)
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list", "watch"]
  # exec the allow-listed commands; API servers from 1.31 authorize the WebSocket exec as
  # `create`, older ones as `get`: both name the same one permission
  - apiGroups: [""]
    resources: ["pods/exec"]
    verbs: ["create", "get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "gpubot.labels" $ctx | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ include "gpubot.serviceAccountName" $ctx }}
    namespace: {{ $ctx.Release.Namespace }}
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
alerts: /etc/gpubot/alerts
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
{{- if and (eq (include "gpubot.nodeAccess" .) "agent") (not .Values.nodeAgent.enabled) -}}
{{- fail "config.node_access: agent needs nodeAgent.enabled: true (the bot execs its node reads into the agent pods)" -}}
{{- end -}}
{{- if and .Values.alerts.existingSecret (not $config.alerts_channel) -}}
{{- fail "alerts.existingSecret needs config.alerts_channel: the Slack channel id the alerts are posted to" -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{- define "gpubot.pvcName" -}}
{{- .Values.persistence.existingClaim | default (printf "%s-state" (include "gpubot.fullname" .)) -}}
{{- end -}}

{{/* config.node_access as the bot reads it (its own default is auto). */}}
{{- define "gpubot.nodeAccess" -}}
{{- .Values.config.node_access | default "auto" -}}
{{- end -}}
