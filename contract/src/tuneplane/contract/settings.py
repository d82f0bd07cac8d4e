"""Settings: each deployable declares the environment it reads once, as a typed class, and
parses it in one place (its CLI entry) from an injected mapping; errors name the variable.

    class IngestSettings(Settings):
        kafka_bootstrap: str = setting(KAFKA_BOOTSTRAP)              # shared: variables.py
        timeout: int = setting("TUNEPLANE_INGEST_TIMEOUT", help="seconds", default=15,
                               parse=positive)
        database_url: Needed[str] = needed(DATABASE_URL, needed_for=("migrate",))
        topics: TopicSettings = section(TopicSettings)

    IngestSettings.from_environ(os.environ)

A setting without a default is required, and a blank value counts as unset. A ``Needed``
one is required only by some commands or modes: unset is fine until one of them calls
``get()``. A setting declared with ``flag="--name"`` is also a command-line flag whose
value, when given, replaces the variable's (``tuneplane.contract.flags``): one declaration,
one parser, one line in ``docs/settings.md``, which the declarations generate
(``describe``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar, dataclass_transform

from tuneplane.contract.parsers import positive, text

T = TypeVar("T")
HINT = "`scripts/services env` prints local values"
UNSET = "is not set"
KEY = "tuneplane.setting"


class SettingsError(ValueError):
    """Settings are missing or malformed; the message names every variable at fault."""

    def __init__(self, message: str, names: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.names = names


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable: its name, what it means and how its text is parsed."""

    name: str
    help: str
    parse: Callable[[str], Any] = text
    secret: bool = False  # kept out of reprs


@dataclass(frozen=True, slots=True)
class Needed(Generic[T]):
    """A setting only some commands or modes need: unset until one of them asks for it."""

    name: str
    value: T | None = None

    def get(self) -> T:
        if self.value is None:
            raise SettingsError(f"{self.name} {UNSET}; {HINT}", (self.name,))
        return self.value

    def __repr__(self) -> str:  # values may be secrets
        return f"Needed({self.name!r}, {'set' if self.value is not None else 'unset'})"


@dataclass(frozen=True, slots=True)
class Spec:
    """What a field declared with ``setting`` or ``needed`` carries in its metadata."""

    variable: Variable
    shown: str | None = None  # the default as documented, when not the value itself
    needed_for: tuple[str, ...] | None = None  # Needed: the commands or modes needing it
    derive: Callable[[Mapping[str, Any]], Any] | None = None  # default from earlier fields
    flag: str | None = None  # the command-line flag that overrides the variable


@dataclass(frozen=True, slots=True)
class Section:
    settings: type[Settings]


def _variable(variable: Variable | str, help: str, parse: Callable[[str], Any] | None,
              secret: bool) -> Variable:
    if isinstance(variable, Variable):
        if help or parse or secret:
            raise TypeError(f"{variable.name} is declared once, in its Variable")
        return variable
    if not help:
        raise TypeError(f"{variable} needs help: what it means")
    return Variable(variable, help, parse or text, secret)


def setting(variable: Variable | str, *, help: str = "",
            parse: Callable[[str], Any] | None = None, secret: bool = False,
            default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
            shown: str | None = None,
            derive: Callable[[Mapping[str, Any]], Any] | None = None,
            flag: str | None = None) -> Any:
    """A variable read into this field. No default (nor ``derive``, a default computed from
    the fields declared before): required. ``parse`` raises ValueError saying why not.
    ``flag``: the command-line flag that, given, replaces the variable's value."""
    found = _variable(variable, help, parse, secret)
    if flag is not None and not flag.startswith("--"):
        raise TypeError(f"{found.name}: a flag starts with --, got {flag!r}")
    return dataclasses.field(default=default, default_factory=default_factory,
                             repr=not found.secret,
                             metadata={KEY: Spec(found, shown, None, derive, flag)})


def needed(variable: Variable | str, *, needed_for: tuple[str, ...], help: str = "",
           parse: Callable[[str], Any] | None = None, secret: bool = False) -> Any:
    """A ``Needed`` variable: required only by ``needed_for`` (commands or modes)."""
    found = _variable(variable, help, parse, secret)
    return dataclasses.field(metadata={KEY: Spec(found, None, needed_for)})


def section(settings: type[Settings]) -> Any:
    """Another settings class read from the same environment (a piece several share)."""
    return dataclasses.field(metadata={KEY: Section(settings)})


@dataclass_transform(kw_only_default=True, frozen_default=True,
                     field_specifiers=(setting, needed, section, dataclasses.field))
class Settings:
    """Base of a deployable's settings: subclasses are frozen, keyword-only dataclasses."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True, kw_only=True)(cls)

    @classmethod
    def from_environ(cls, env: Mapping[str, str],
                     flags: Mapping[str, str] | None = None) -> Self:
        """Every problem at once; one alone reads ``NAME is not set`` or ``NAME <why>``.
        ``flags``: the text of the flags given, by variable name; each replaces that
        variable's value, and a problem with it names the flag."""
        problems: list[tuple[str, str]] = []  # (variable or flag, what is wrong)
        made = cls._parse(env, problems, flags or {})
        if made is None:
            message = "; ".join(f"{name} {why}" for name, why in problems)
            unset = any(why == UNSET for _, why in problems)
            raise SettingsError(f"{message}; {HINT}" if unset else message,
                                tuple(name for name, _ in problems))
        return made

    @classmethod
    def _parse(cls, env: Mapping[str, str], problems: list[tuple[str, str]],
               flags: Mapping[str, str]) -> Self | None:
        values: dict[str, Any] = {}
        failed = False
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            spec = field.metadata.get(KEY)
            if isinstance(spec, Section):
                values[field.name] = spec.settings._parse(env, problems, flags)
                failed = failed or values[field.name] is None
                continue
            if spec is None:  # not from the environment: its default, or a flag
                continue
            assert isinstance(spec, Spec)
            variable = spec.variable
            given = flags.get(variable.name)
            label = variable.name if given is None else str(spec.flag)
            raw = (env.get(variable.name, "") if given is None else given).strip()
            if raw:
                try:
                    value = variable.parse(raw)
                except ValueError as exc:  # a secret's value stays out of the message
                    problems.append((label, "is malformed" if variable.secret else str(exc)))
                    failed = True
                    continue
                values[field.name] = value if spec.needed_for is None else \
                    Needed(variable.name, value)
            elif spec.needed_for is not None:
                values[field.name] = Needed(variable.name)
            elif field.default is not dataclasses.MISSING:
                values[field.name] = field.default
            elif field.default_factory is not dataclasses.MISSING:
                values[field.name] = field.default_factory()
            elif spec.derive is not None:
                if not failed:
                    values[field.name] = spec.derive(values)
            else:
                problems.append((variable.name, UNSET))
                failed = True
        return None if failed else cls(**values)


@dataclass(frozen=True, slots=True)
class Described:
    """One setting of a class, as ``docs/settings.md`` lists it."""

    variable: Variable
    default: str  # its text, "" when it has none
    required: bool  # always: it has no default
    needed_for: tuple[str, ...] = ()  # a Needed one: the commands or modes requiring it
    shown: str = ""  # the default as documented, when not its text
    flag: str = ""  # the flag that overrides it, "" when none

    def needed_by(self, uses: Collection[str]) -> bool:
        """Whether a deployable run for ``uses`` (its command and modes) must have it."""
        return self.required or not set(self.needed_for).isdisjoint(uses)

    @property
    def requirement(self) -> str:
        if self.needed_for:
            return "for " + ", ".join(self.needed_for)
        return "yes" if self.required else "no"


def describe(settings: type[Settings]) -> list[Described]:
    found: list[Described] = []
    for field in dataclasses.fields(settings):  # type: ignore[arg-type]
        spec = field.metadata.get(KEY)
        if isinstance(spec, Section):
            found += describe(spec.settings)
        elif isinstance(spec, Spec):
            unset = field.default is dataclasses.MISSING and \
                field.default_factory is dataclasses.MISSING
            text = "" if field.default in (dataclasses.MISSING, None) else str(field.default)
            found.append(Described(spec.variable, text,
                                   unset and spec.derive is None and spec.needed_for is None,
                                   spec.needed_for or (), spec.shown or text,
                                   spec.flag or ""))
    return found


def require(environ: Mapping[str, str], name: str) -> str:
    """One required variable, for code not yet moved onto a ``Settings`` class."""
    value = environ.get(name, "").strip()
    if not value:
        raise SettingsError(f"{name} {UNSET}; {HINT}", (name,))
    return value


def positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    """One optional positive whole number, for code not yet moved onto a ``Settings`` class."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return positive(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} {exc}", (name,)) from None
