"""Every control-plane error has a kind, so callers can answer it without reading its text."""

from __future__ import annotations

import inspect

from tuneplane.controlplane import errors

KINDS = (errors.NotFound, errors.Conflict, errors.NotYet, errors.Invalid)
FAMILIES = (errors.RunError, errors.LaunchError, errors.EnrollmentError, errors.UserError,
            errors.ProjectError)


def concrete() -> list[type[errors.ControlPlaneError]]:
    bases = {errors.ControlPlaneError, *KINDS, *FAMILIES}
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, errors.ControlPlaneError) and c not in bases]


def test_every_error_is_of_one_kind() -> None:
    found = concrete()
    assert len(found) >= 15
    without = [c.__name__ for c in found if sum(issubclass(c, k) for k in KINDS) != 1]
    assert not without, f"errors without exactly one kind: {without}"


def test_every_error_but_a_destination_belongs_to_a_family() -> None:
    orphans = [c.__name__ for c in concrete() if not issubclass(c, FAMILIES)]
    assert not orphans, f"errors outside every family: {orphans}"
