"""TelemetryDestination: where the fleet's telemetry is exported, declared once."""
