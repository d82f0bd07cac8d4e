"""A rich channel's JSON Schema is data a user wrote, never instructions to fetch anything.

fastjsonschema resolves a ``$ref`` it cannot find in the schema through its handlers and,
for a scheme with no handler, through ``urllib`` (``http:``, ``https:``, ``ftp:``,
``file:``): one user's artifact could make every collector of its run reach into the
network or read local files. So a ``$ref`` must be a local JSON pointer (``#`` or
``#/...``), checked where the artifact is checked, and schemas are compiled with handlers
that claim every scheme and refuse it, so nothing is fetched even through a ``$id`` that
moves the base URI. fastjsonschema turns a schema into Python source: a schema nested
deeper than Python can compile is refused where the artifact is checked, and anything
else that fails to compile is refused with the reason, never raised as it came.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

import fastjsonschema

#: The only references a channel schema may hold: the whole schema, or a place inside it.
LOCAL_REF = re.compile(r"#(/.*)?", re.S)
#: Objects and arrays within one another; fastjsonschema's code for deeper ones outgrows
#: what Python compiles (nested blocks, indentation), at about 24 levels of ``items``.
MAX_DEPTH = 20


class SchemaRefused(ValueError):
    """The schema would reach outside itself; the message names the place and the ref."""


def _refuse(uri: str) -> Any:
    raise fastjsonschema.JsonSchemaDefinitionException(
        f"$ref {uri!r} would be fetched; channel schemas are compiled offline, only local "
        "references (#/...) resolve")


class NoFetching(dict[str, Callable[[str], Any]]):
    """fastjsonschema's handlers by URI scheme: every scheme is claimed, and refused."""

    def __contains__(self, scheme: object) -> bool:
        return True

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return _refuse


def _place(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def foreign_refs(schema: Any) -> Iterator[tuple[str, str]]:
    """Every ``$ref`` that is not a local JSON pointer, as (place in the schema, value), and
    the first place nested deeper than MAX_DEPTH (as the value ``too deep``).

    Walks every object and array (iteratively: a deep schema cannot exhaust the stack), so
    a ``$ref`` is found wherever fastjsonschema might follow it.
    """
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), schema)]
    seen: set[int] = set()
    while stack:
        path, node = stack.pop()
        if id(node) in seen:  # YAML aliases share nodes: each is walked once
            continue
        seen.add(id(node))
        if len(path) > MAX_DEPTH:
            yield _place(path), "too deep"
            return
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref is not None and not (isinstance(ref, str) and LOCAL_REF.fullmatch(ref)):
                yield _place((*path, "$ref")), repr(ref)
            stack.extend(((*path, str(k)), v) for k, v in reversed(node.items())
                         if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node)))
                         if isinstance(v, dict | list))


def check_schema(schema: Any, where: str) -> None:
    """Refuse the first non-local ``$ref`` or too deep a nesting, naming ``where`` the schema
    sits and the place in it."""
    for place, ref in foreign_refs(schema):
        if ref == "too deep":
            raise SchemaRefused(f"{where}{place} is nested deeper than {MAX_DEPTH} levels of "
                                "objects and arrays, more than a channel schema may be")
        raise SchemaRefused(f"{where}{place} is {ref}: only local references (# or #/...) "
                            "are allowed in a channel schema; nothing is fetched")


def compile_offline(schema: Any, where: str) -> Callable[[Any], Any]:
    """The schema's validator, compiled with no way to fetch anything.

    Raises SchemaRefused for a non-local ``$ref``, too deep a nesting, or any schema it
    cannot compile (a bad regular expression, a keyword of the wrong type), with the reason.
    """
    check_schema(schema, where)
    try:
        # fastjsonschema rewrites $refs in place against $id: compile a copy, keep the data.
        validate: Callable[[Any], Any] = fastjsonschema.compile(copy.deepcopy(schema),
                                                                handlers=NoFetching())
    except Exception as exc:  # its code generator and exec raise all kinds for bad input
        raise SchemaRefused(f"{where} is not a usable JSON Schema: {type(exc).__name__}: "
                            f"{exc}") from None
    return validate
