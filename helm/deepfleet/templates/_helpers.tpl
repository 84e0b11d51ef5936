{{/* Chart name, truncated to the 63 characters of a label. */}}
{{- define "deepfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every resource name. */}}
{{- define "deepfleet.fullname" -}}
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

{{/* Labels of every resource. */}}
{{- define "deepfleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "deepfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the release's pods. */}}
{{- define "deepfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "deepfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Selector labels of one component: call with (dict "root" $ "component" "worker"). */}}
{{- define "deepfleet.componentSelector" -}}
{{ include "deepfleet.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "deepfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "deepfleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "deepfleet.image" -}}
{{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The submission queue's name, as the scheduler derives it. */}}
{{- define "deepfleet.submissionsQueue" -}}
{{- default (printf "%s.submissions" .Values.config.queueName) .Values.config.submissionsQueue }}
{{- end }}

{{/* Secret and key of the broker URL. */}}
{{- define "deepfleet.queueSecret" -}}
{{- if .Values.rabbitmq.existingSecret }}{{ .Values.rabbitmq.existingSecret }}{{ else }}{{ include "deepfleet.fullname" . }}-connections{{ end }}
{{- end }}
{{- define "deepfleet.queueSecretKey" -}}
{{- if .Values.rabbitmq.existingSecret }}{{ .Values.rabbitmq.existingSecretKey }}{{ else }}queue-url{{ end }}
{{- end }}

{{/* Whether the chart's connections Secret holds the store URL. */}}
{{- define "deepfleet.storeInChartSecret" -}}
{{- if and (not .Values.redis.existingSecret) (not .Values.redis.cluster.enabled) }}true{{ end }}
{{- end }}

{{/* Whether the chart creates the connections Secret at all. */}}
{{- define "deepfleet.connectionsSecret" -}}
{{- if or (not .Values.rabbitmq.existingSecret) (include "deepfleet.storeInChartSecret" .) }}true{{ end }}
{{- end }}

{{- define "deepfleet.contextKeySecret" -}}
{{- if .Values.contextKey.existingSecret }}{{ .Values.contextKey.existingSecret }}{{ else }}{{ include "deepfleet.fullname" . }}-context-key{{ end }}
{{- end }}
{{- define "deepfleet.contextKeySecretKey" -}}
{{- if .Values.contextKey.existingSecret }}{{ .Values.contextKey.existingSecretKey }}{{ else }}context-key{{ end }}
{{- end }}

{{/* The Secret of the scheduler's API key lines: the given one, else the chart's generated one; empty when the API is served open. */}}
{{- define "deepfleet.apiKeysSecret" -}}
{{- if .Values.api.existingSecret }}{{ .Values.api.existingSecret }}{{ else if not .Values.api.allowOpen }}{{ include "deepfleet.fullname" . }}-api-key{{ end }}
{{- end }}

{{/* The Redis Cluster URL the binary parses: redis+cluster://[:$(REDIS_PASSWORD)@]h1:p1,h2:p2, or comma-separated rediss:// URLs with TLS. */}}
{{- define "deepfleet.clusterUrl" -}}
{{- $c := .Values.redis.cluster }}
{{- $auth := ternary ":$(DEEPFLEET_REDIS_PASSWORD)@" "" (ne $c.passwordSecret "") }}
{{- if $c.tls }}
{{- $urls := list }}
{{- range $c.nodes }}{{ $urls = append $urls (printf "rediss://%s%s" $auth .) }}{{ end }}
{{- join "," $urls }}
{{- else }}
{{- printf "redis+cluster://%s%s" $auth (join "," $c.nodes) }}
{{- end }}
{{- end }}

{{/* Environment of every deepfleet container: call with (dict "root" $ "component" "worker"). */}}
{{- define "deepfleet.env" -}}
{{- $v := .root.Values -}}
- name: DEEPFLEET_CONFIG
  value: /etc/deepfleet/deepfleet.toml
- name: RUST_LOG
  value: {{ $v.config.logLevel | quote }}
- name: DEEPFLEET__QUEUE
  valueFrom:
    secretKeyRef:
      name: {{ include "deepfleet.queueSecret" .root }}
      key: {{ include "deepfleet.queueSecretKey" .root }}
{{- if $v.redis.cluster.enabled }}
{{- if $v.redis.cluster.passwordSecret }}
- name: DEEPFLEET_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $v.redis.cluster.passwordSecret }}
      key: {{ $v.redis.cluster.passwordSecretKey }}
{{- end }}
- name: DEEPFLEET__STORE
  value: {{ include "deepfleet.clusterUrl" .root | quote }}
{{- else }}
- name: DEEPFLEET__STORE
  valueFrom:
    secretKeyRef:
      name: {{ if $v.redis.existingSecret }}{{ $v.redis.existingSecret }}{{ else }}{{ include "deepfleet.fullname" .root }}-connections{{ end }}
      key: {{ if $v.redis.existingSecret }}{{ $v.redis.existingSecretKey }}{{ else }}store-url{{ end }}
{{- end }}
- name: DEEPFLEET__CONTEXT_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "deepfleet.contextKeySecret" .root }}
      key: {{ include "deepfleet.contextKeySecretKey" .root }}
{{- with $v.encryption.existingSecret }}
{{- /* Encryption at rest is on as soon as a keyring Secret is given. */}}
- name: DEEPFLEET__ENCRYPTION__KEYS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $v.encryption.existingSecretKey }}
{{- with $v.encryption.current }}
- name: DEEPFLEET__ENCRYPTION__CURRENT
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if eq $.component "scheduler" }}
{{- if include "deepfleet.apiKeysSecret" $.root }}
- name: DEEPFLEET__API__KEYS_FILE
  value: /etc/deepfleet-api/keys
{{- end }}
{{- if $v.api.allowOpen }}
- name: DEEPFLEET__API__ALLOW_OPEN
  value: "true"
{{- $service := printf "%s-scheduler" (include "deepfleet.fullname" $.root) }}
{{- $hosts := list $service (printf "%s.%s" $service $.root.Release.Namespace) (printf "%s.%s.svc" $service $.root.Release.Namespace) (printf "%s.%s.svc.cluster.local" $service $.root.Release.Namespace) }}
{{- if $v.scheduler.ingress.enabled }}
{{- range $v.scheduler.ingress.hosts }}
{{- $hosts = append $hosts .host }}
{{- end }}
{{- end }}
- name: DEEPFLEET__API__ALLOWED_HOSTS
  value: {{ join "," (concat $hosts $v.api.allowedHosts) | quote }}
{{- end }}
{{- with $v.api.tenantRunsInFlight }}
- name: DEEPFLEET__API__TENANT_RUNS_IN_FLIGHT
  value: {{ . | quote }}
{{- end }}
{{- with $v.api.cors.allowOrigins }}
- name: DEEPFLEET__API__CORS__ALLOW_ORIGINS
  value: {{ join "," . | quote }}
{{- end }}
{{- with $v.api.cors.allowHeaders }}
- name: DEEPFLEET__API__CORS__ALLOW_HEADERS
  value: {{ join "," . | quote }}
{{- end }}
{{- with $v.api.cors.exposeHeaders }}
- name: DEEPFLEET__API__CORS__EXPOSE_HEADERS
  value: {{ join "," . | quote }}
{{- end }}
{{- if $v.api.cors.allowCredentials }}
- name: DEEPFLEET__API__CORS__ALLOW_CREDENTIALS
  value: "true"
{{- end }}
{{- range $v.webhooks.secrets }}
{{- /* Each tenant's webhook signing secret, from its Secret. */}}
- name: DEEPFLEET__WEBHOOKS__SECRETS__{{ .tenant | upper }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey }}
{{- end }}
{{- end }}
{{- with $v.config.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $v.config.otel.protocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ default (printf "%s-%s" (include "deepfleet.fullname" $.root) $.component) $v.config.otel.serviceName | quote }}
{{- end }}
{{- range $v.providerSecrets }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey }}
{{- end }}
{{- with $v.pod.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes of every deepfleet pod, and the scheduler's API keys: call with (dict "root" $ "component" "worker"). */}}
{{- define "deepfleet.volumes" -}}
{{- $root := .root }}
{{- with $root -}}
- name: config
  configMap:
    name: {{ include "deepfleet.fullname" . }}-config
    items:
      - key: deepfleet.toml
        path: deepfleet.toml
      {{- range $name, $spec := .Values.agents }}
      - key: agents.{{ $name }}.yaml
        path: agents/{{ $name }}.yaml
      {{- end }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.pod.tmpSizeLimit }}
{{- end }}
{{- with include "deepfleet.apiKeysSecret" $root }}
{{- if eq $.component "scheduler" }}
- name: api-keys
  secret:
    secretName: {{ . }}
    items:
      - key: {{ if $root.Values.api.existingSecret }}{{ $root.Values.api.existingSecretKey }}{{ else }}keys{{ end }}
        path: keys
{{- end }}
{{- end }}
{{- end }}

{{/* Mounts of every deepfleet container, and the scheduler's API keys: call with (dict "root" $ "component" "worker"). */}}
{{- define "deepfleet.volumeMounts" -}}
- name: config
  mountPath: /etc/deepfleet
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if and (eq .component "scheduler") (include "deepfleet.apiKeysSecret" .root) }}
- name: api-keys
  mountPath: /etc/deepfleet-api
  readOnly: true
{{- end }}
{{- end }}

{{/* Values the schema cannot express; called from the ConfigMap. */}}
{{- define "deepfleet.validate" -}}
{{- if and .Values.redis.cluster.enabled (empty .Values.redis.cluster.nodes) }}
{{- fail "redis.cluster.enabled needs redis.cluster.nodes (host:port seeds)" }}
{{- end }}
{{- if and (not .Values.rabbitmq.existingSecret) (empty .Values.rabbitmq.url) }}
{{- fail "give the broker as rabbitmq.url or rabbitmq.existingSecret" }}
{{- end }}
{{- if and (not .Values.redis.cluster.enabled) (not .Values.redis.existingSecret) (empty .Values.redis.url) }}
{{- fail "give the store as redis.url, redis.existingSecret or redis.cluster" }}
{{- end }}
{{- range $name, $spec := .Values.agents }}
{{- if ne $name $spec.name }}
{{- fail (printf "agents.%s has name %q: the key must be the spec's name" $name $spec.name) }}
{{- end }}
{{- end }}
{{- if and .Values.scheduler.enabled (empty .Values.agents) }}
{{- fail "the scheduler needs at least one agent spec in agents" }}
{{- end }}
{{- if and (eq .Values.worker.autoscaling.mode "hpa") (gt (int .Values.worker.autoscaling.hpa.minReplicas) (int .Values.worker.autoscaling.hpa.maxReplicas)) }}
{{- fail "worker.autoscaling.hpa.minReplicas exceeds maxReplicas" }}
{{- end }}
{{- if and (eq .Values.worker.autoscaling.mode "keda") (gt (int .Values.worker.autoscaling.keda.minReplicaCount) (int .Values.worker.autoscaling.keda.maxReplicaCount)) }}
{{- fail "worker.autoscaling.keda.minReplicaCount exceeds maxReplicaCount" }}
{{- end }}
{{- if gt (int .Values.config.worker.retryBaseMs) (int .Values.config.worker.retryMaxMs) }}
{{- fail "config.worker.retryBaseMs exceeds retryMaxMs" }}
{{- end }}
{{- end }}

{{/*
The pod template of one role: call with (dict "root" $ "component" "worker"
"role" .Values.worker "args" (list ...) "portName" "metrics" "port" 9464
"grace" 45).
*/}}
{{- define "deepfleet.podTemplate" -}}
{{- $root := .root }}
{{- $role := .role -}}
metadata:
  labels:
    {{- include "deepfleet.componentSelector" . | nindent 4 }}
    {{- with $role.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- with $role.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "deepfleet.serviceAccountName" $root }}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: {{ .grace }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.pod.securityContext | nindent 4 }}
  containers:
    - name: {{ .component }}
      image: {{ include "deepfleet.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args:
        {{- toYaml .args | nindent 8 }}
      ports:
        - name: {{ .portName }}
          containerPort: {{ .port }}
          protocol: TCP
      env:
        {{- include "deepfleet.env" (dict "root" $root "component" .component) | nindent 8 }}
      livenessProbe:
        {{- toYaml $role.livenessProbe | nindent 8 }}
      readinessProbe:
        {{- toYaml $role.readinessProbe | nindent 8 }}
      resources:
        {{- toYaml $role.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.pod.containerSecurityContext | nindent 8 }}
      volumeMounts:
        {{- include "deepfleet.volumeMounts" (dict "root" $root "component" .component) | nindent 8 }}
  volumes:
    {{- include "deepfleet.volumes" (dict "root" $root "component" .component) | nindent 4 }}
  {{- with $role.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $role.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $role.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* A PodDisruptionBudget of one role: call with (dict "root" $ "component" "worker" "pdb" .Values.worker.pdb). */}}
{{- define "deepfleet.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "deepfleet.fullname" .root }}-{{ .component }}
  labels:
    {{- include "deepfleet.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  maxUnavailable: {{ .pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "deepfleet.componentSelector" . | nindent 6 }}
{{- end }}
