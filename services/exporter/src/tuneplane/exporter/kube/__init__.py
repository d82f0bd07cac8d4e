"""TelemetryDestinations as Kubernetes custom resources: the CRD, the controller composing
the OpenTelemetry Collector's Deployment from them, its admission webhook, and the
Kubernetes backend of ``fleet.DestinationStore``."""
