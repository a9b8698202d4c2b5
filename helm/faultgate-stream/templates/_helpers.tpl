{{- define "fgs.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fgs.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "fgs.headless" -}}
{{- printf "%s-headless" (include "fgs.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fgs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fgs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "fgs.labels" -}}
{{ include "fgs.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The service's config.yaml: the user's config with the chart's endpoints and files. */}}
{{- define "fgs.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $_ := set $config "receive" (merge (dict "grpc_endpoint" (printf "0.0.0.0:%v" .Values.ports.otlpGrpc) "http_endpoint" (printf "0.0.0.0:%v" .Values.ports.otlpHttp)) (default (dict) $config.receive)) -}}
{{- $_ := set $config "metrics" (merge (dict "endpoint" (printf "0.0.0.0:%v" .Values.ports.metrics)) (default (dict) $config.metrics)) -}}
{{- $_ := set $config "shutdown_grace" (printf "%vs" .Values.shutdownGraceSeconds) -}}
{{- if .Values.wal.enabled -}}
{{- $_ := set $config "durability" (dict "wal" (dict "dir" "/var/lib/faultgate-stream/wal" "max_bytes" .Values.wal.maxBytes "fsync" .Values.wal.fsync)) -}}
{{- end -}}
{{- $checks := default (dict) $config.checks -}}
{{- with .Values.checks.enabled }}{{ $_ := set $checks "enabled" . }}{{ end -}}
{{- with .Values.checks.plugins }}{{ $_ := set $checks "plugins" . }}{{ end -}}
{{- with .Values.checks.rules }}{{ $_ := set $checks "rules" (printf "/etc/faultgate-stream/rules.%s.json" .) }}{{ end -}}
{{- $bindings := list -}}
{{- range .Values.checks.bindings -}}
{{- $b := dict "agents" .agents -}}
{{- with .policy }}{{ $_ := set $b "policy" (printf "/etc/faultgate-stream/policy.%s.json" .) }}{{ end -}}
{{- with .spec }}{{ $_ := set $b "spec" (printf "/etc/faultgate-stream/spec.%s.json" .) }}{{ end -}}
{{- with .plugins }}{{ $_ := set $b "plugins" . }}{{ end -}}
{{- with .rules }}{{ $_ := set $b "rules" (printf "/etc/faultgate-stream/rules.%s.json" .) }}{{ end -}}
{{- $bindings = append $bindings $b -}}
{{- end -}}
{{- with $bindings }}{{ $_ := set $checks "bindings" . }}{{ end -}}
{{- if $checks }}{{ $_ := set $config "checks" $checks }}{{ end -}}
{{- toYaml $config -}}
{{- end -}}
