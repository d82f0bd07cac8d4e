"""Which TelemetryDestinations a release takes (its label value, a setting the controller
requires and the exporter needs with Kubernetes destinations) and which Secrets its sinks
may name (a prefix, ``tuneplane-sink-`` unless set)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.exporter.kube.test_workload import TEMPLATE
from tuneplane.contract.settings import SettingsError
from tuneplane.exporter.kube import scope
from tuneplane.exporter.kube.settings import ControllerSettings
from tuneplane.exporter.settings import ExporterSettings

CONTROLLER = {
    "TUNEPLANE_KUBE_NAMESPACE": "ml", "TUNEPLANE_DESTINATIONS_OWNER": "rel-destinations",
    "TUNEPLANE_OTELCOL_NAME": "rel-otelcol", "TUNEPLANE_OTELCOL_TEMPLATE": json.dumps(TEMPLATE)}
EXPORTER = {"TUNEPLANE_DATABASE_URL": "postgresql://x@y/z",
            "TUNEPLANE_KAFKA_BOOTSTRAP": "kafka:9092"}


def test_the_controller_needs_its_release_and_defaults_the_secret_prefix() -> None:
    with pytest.raises(SettingsError, match="TUNEPLANE_DESTINATIONS_RELEASE is not set"):
        ControllerSettings.from_environ(CONTROLLER)
    made = ControllerSettings.from_environ({**CONTROLLER,
                                            "TUNEPLANE_DESTINATIONS_RELEASE": "ml.tuneplane"})
    assert (made.release, made.sink_secret_prefix) == ("ml.tuneplane", "tuneplane-sink-")


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("TUNEPLANE_DESTINATIONS_RELEASE", "ml/" + "x" * 10, "is not a label value"),
    ("TUNEPLANE_DESTINATIONS_RELEASE", "n" * 40 + "." + "r" * 30, "is not a label value"),
    ("TUNEPLANE_DESTINATIONS_RELEASE", "ml.rel-", "is not a label value"),
    ("TUNEPLANE_SINK_SECRET_PREFIX", "Sink_", "does not start a Secret's name"),
])
def test_a_malformed_value_is_refused_naming_the_variable(variable: str, value: str,
                                                          words: str) -> None:
    environ = {**CONTROLLER, "TUNEPLANE_DESTINATIONS_RELEASE": "ml.rel", variable: value}
    with pytest.raises(SettingsError, match=f"^{variable} {value!r} {words}"):
        ControllerSettings.from_environ(environ)


def test_the_exporter_needs_the_release_only_for_kubernetes_destinations() -> None:
    made = ExporterSettings.from_environ(EXPORTER)
    with pytest.raises(SettingsError, match="TUNEPLANE_DESTINATIONS_RELEASE is not set"):
        made.release.get()
    given = ExporterSettings.from_environ({**EXPORTER,
                                          "TUNEPLANE_DESTINATIONS_RELEASE": "ml.rel"})
    assert (given.release.get(), given.sink_secret_prefix) == ("ml.rel", "tuneplane-sink-")


@pytest.mark.parametrize(("labels", "taken"), [
    ({scope.RELEASE_LABEL: "ml.rel"}, True),
    ({scope.RELEASE_LABEL: "ml.other"}, False),
    ({}, False),
    (None, False),
])
def test_a_release_takes_only_resources_labelled_for_it(labels: Any, taken: bool) -> None:
    assert scope.selector("ml.rel") == "tuneplane.dev/release=ml.rel"
    assert scope.selected({"metadata": {"name": "a", "labels": labels}}, "ml.rel") is taken
