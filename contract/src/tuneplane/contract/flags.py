"""Settings as flags: a setting declared with ``flag="--name"`` is also a command-line flag,
and the flag, when given, replaces the variable. One declaration gives the variable, the
flag, its help, its parser and its line in ``docs/settings.md``; the CLI does not declare
the flag a second time, nor parse its value on its own.

    p = argparse.ArgumentParser()
    flags.add_to(p, IngestSettings)              # --max-concurrent-rpcs, --kafka-timeout, ...
    args = p.parse_args(argv)
    settings = flags.settings(IngestSettings, os.environ, args)

Precedence: the flag, then the variable, then the default. A malformed flag is reported
with the flag's name, like a malformed variable with the variable's.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator, Mapping
from typing import TypeVar

from tuneplane.contract.settings import KEY, Section, Settings, Spec

S = TypeVar("S", bound=Settings)


def flagged(settings: type[Settings]) -> Iterator[tuple[str, Spec, object]]:
    """Each setting of ``settings`` (its sections too) that has a flag: the flag, the
    setting, its default."""
    for field in dataclasses.fields(settings):  # type: ignore[arg-type]
        spec = field.metadata.get(KEY)
        if isinstance(spec, Section):
            yield from flagged(spec.settings)
        elif isinstance(spec, Spec) and spec.flag is not None:
            yield spec.flag, spec, spec.shown or (None if field.default is dataclasses.MISSING
                                                  else field.default)


def destination(spec: Spec) -> str:
    """Where argparse keeps a flag's text: named after its variable, so never a clash with
    the CLI's own flags."""
    return "setting:" + spec.variable.name


def add_to(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
           settings: type[Settings]) -> None:
    """Add the flag of each flagged setting of ``settings``; its help is the setting's, with
    the variable it overrides and the default."""
    for flag, spec, default in flagged(settings):
        shown = "" if default is None else f"; default {default}"
        parser.add_argument(flag, dest=destination(spec), default=None,
                            metavar=flag.lstrip("-").upper().replace("-", "_"),
                            help=f"{spec.variable.help} (or {spec.variable.name}{shown})"
                            .replace("%", "%%"))


def given(args: argparse.Namespace, settings: type[Settings]) -> dict[str, str]:
    """The text of each flag of ``settings`` given on the command line, by variable name."""
    found: dict[str, str] = {}
    for _, spec, _ in flagged(settings):
        value = getattr(args, destination(spec), None)
        if value is not None:
            found[spec.variable.name] = value
    return found


def settings(cls: type[S], env: Mapping[str, str], args: argparse.Namespace) -> S:
    """``cls`` from ``env``, each flag given replacing its variable."""
    return cls.from_environ(env, given(args, cls))
