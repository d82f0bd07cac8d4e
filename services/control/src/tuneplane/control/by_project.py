"""An operator's choice per project, from a flag given once per project: ``PROJECT=VALUE``
for one project, a bare ``VALUE`` for every project not named (control's
``--slurm-run-as``, ``--kubernetes-namespace``). A project named twice is refused, and one
with no value is refused when asked for, saying which flag gives it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class ByProject(Generic[T]):
    def __init__(self, settings: Sequence[str], *, flag: str, what: str, placeholder: str,
                 resolve: Callable[[str], T], error: type[ValueError]) -> None:
        self._flag, self._what, self._error = flag, what, error
        self._placeholder = placeholder
        self._by_project: dict[str, T] = {}
        self._default: T | None = None
        for item in settings:
            project, sep, value = item.rpartition("=")
            resolved = resolve(value)
            if not sep:
                self._default = resolved
            elif project in self._by_project:
                raise error(f"{flag} names project {project!r} twice")
            else:
                self._by_project[project] = resolved

    def of(self, project: str) -> T:
        found = self._by_project.get(project, self._default)
        if found is None:
            raise self._error(f"project {project!r} has no {self._what}; control needs "
                              f"{self._flag} {project}={self._placeholder}")
        return found

    def chosen(self) -> list[T]:
        """Every value named, the bare one last."""
        return [*self._by_project.values(), *([self._default] if self._default else [])]
