{{/* <release>-stores, or the release's name where it says stores already (release
"stores": stores-kafka, stores-database...). */}}
{{- define "stores.fullname" -}}
{{- if contains "stores" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-stores" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of a store's pods; the tuneplane chart's networkPolicy.stores selects them. */}}
{{- define "stores.podLabels" -}}
app.kubernetes.io/name: tuneplane-stores
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .store }}
{{- end -}}

{{/* A store's data volume: a claim on persistence.storageClass, or an emptyDir. */}}
{{- define "stores.volume" -}}
{{- if .root.Values.persistence.storageClass }}
volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: {{ .root.Values.persistence.storageClass }}
      resources: {requests: {storage: {{ .root.Values.persistence.size }}}}
{{- end }}
{{- end -}}

{{- define "stores.emptyDir" -}}
{{- if not .Values.persistence.storageClass }}
volumes:
  - name: data
    emptyDir: {}
{{- end }}
{{- end -}}
