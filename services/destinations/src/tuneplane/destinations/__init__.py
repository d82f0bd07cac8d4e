"""TelemetryDestination, the resource: its schema, checks, redaction and the collector config
composed from it. Pure: the control plane stores resources, the exporter and its Kubernetes
controller apply them, and ``tuneplane destinations`` checks and renders them offline."""
