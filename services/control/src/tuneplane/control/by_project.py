"""An operator's choice per project, from a flag given once per project: ``PROJECT=VALUE``
for one project, a bare ``VALUE`` for every project not named (control's
``--slurm-run-as``, ``--kubernetes-namespace``, ``--kubernetes-spool``). The project is what
comes before the first ``=``, a project's name (a value may hold ``=``); a project named
twice, or two bare values, are refused, and a project with no value is refused when asked
for, saying which flag gives it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from tuneplane.controlplane.projects import NAME

T = TypeVar("T")


def split(item: str) -> tuple[str, str]:
    """``PROJECT=VALUE`` as (project, value); a bare value as ("", value)."""
    project, sep, value = item.partition("=")
    return (project, value) if sep and NAME.fullmatch(project) else ("", item)


class ByProject(Generic[T]):
    def __init__(self, settings: Sequence[str], *, flag: str, what: str, placeholder: str,
                 resolve: Callable[[str], T], error: type[ValueError]) -> None:
        self._flag, self._what, self._error = flag, what, error
        self._placeholder = placeholder
        self._by_project: dict[str, T] = {}
        self._default: T | None = None
        for item in settings:
            project, value = split(item)
            resolved = resolve(value)
            if not project:
                if self._default is not None:
                    raise error(f"{flag} gives two values for every project not named")
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
