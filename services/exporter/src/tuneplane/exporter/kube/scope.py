"""Which TelemetryDestinations a release takes, and which Secrets their sinks may name.

TelemetryDestination is cluster-scoped, and several releases can share a cluster: each
takes only the resources labelled ``tuneplane.dev/release: <namespace>.<release>`` with
its own value (``TUNEPLANE_DESTINATIONS_RELEASE``, the chart sets it). Its controller and
exporter list and watch with that label selector, its webhook is asked about those only
(the chart's ``objectSelector``), and only those get a status from it; one with another
value, or none, is another release's or nobody's.

A sink's ``secretRef`` names a Secret of the release's namespace, where the collector
runs: only one whose name starts with ``TUNEPLANE_SINK_SECRET_PREFIX``
(``tuneplane-sink-``), so that no resource sends the release's own Secrets (the shared
JWT secret and encryption key, the database URL) to an endpoint of its choosing.
"""

from __future__ import annotations

import re
from typing import Any

from tuneplane.contract.settings import Variable

RELEASE_LABEL = "tuneplane.dev/release"
#: A label value: at most 63 characters, alphanumerics with - _ . inside.
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
#: The start of a Secret's name (a DNS label, as ``secretRef.name`` is).
SECRET_PREFIX = re.compile(r"^[a-z0-9][-a-z0-9]{0,61}$")
DEFAULT_SECRET_PREFIX = "tuneplane-sink-"


def release_value(raw: str) -> str:
    if not LABEL_VALUE.match(raw):
        raise ValueError(f"{raw!r} is not a label value (at most 63 characters: letters, "
                         "digits, '-', '_' and '.', starting and ending with a letter or "
                         "digit)")
    return raw


def secret_prefix(raw: str) -> str:
    if not SECRET_PREFIX.match(raw):
        raise ValueError(f"{raw!r} does not start a Secret's name (lower-case letters, "
                         "digits and '-', at most 62 characters)")
    return raw


RELEASE = Variable(
    "TUNEPLANE_DESTINATIONS_RELEASE",
    f"the value of the {RELEASE_LABEL} label of the TelemetryDestinations this release "
    "composes (the chart sets <namespace>.<release>); any other is not read, checked or "
    "given a status",
    release_value)
SINK_SECRET_PREFIX = Variable(
    "TUNEPLANE_SINK_SECRET_PREFIX",
    "what the name of every Secret a TelemetryDestination's sink names (secretRef) starts "
    "with; a sink naming any other Secret of the namespace is refused",
    secret_prefix)


def selector(release: str) -> str:
    """The label selector of the release's TelemetryDestinations."""
    return f"{RELEASE_LABEL}={release}"


def selected(resource: Any, release: str) -> bool:
    """Whether ``resource`` (as the API holds it) is one of the release's."""
    metadata = resource.get("metadata") if isinstance(resource, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return isinstance(labels, dict) and bool(labels.get(RELEASE_LABEL) == release)
