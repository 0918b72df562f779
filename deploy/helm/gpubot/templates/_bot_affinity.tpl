{{/* The bot's own pod affinity (the Deployment merges values.affinity over it): off GPU nodes
     (and never on a qGPU node with tkeQgpu), replicas on different nodes with config.state kubernetes. */}}
{{- define "gpubot.botAffinity" -}}
{{- $kube := eq (.Values.config.state | default "sqlite") "kubernetes" -}}
nodeAffinity:
  {{- if .Values.tkeQgpu.enabled }}
  # never on a qGPU node: restarting qgpu-manager or kubelet there (the very fixes the
  # bot offers) must not take the bot down with it
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          - key: qgpu-device-enable
            operator: NotIn
            values: ["enable"]
  {{- end }}
  # keep the bot off GPU nodes: it must keep answering while a GPU node is being fixed
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      preference:
        matchExpressions:
          - key: nvidia.com/gpu.present
            operator: DoesNotExist
{{- if $kube }}
# replicas on different nodes, so one node lost takes one replica, not the bot
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "gpubot.selectorLabels" . | nindent 12 }}
{{- end }}
{{- end -}}
