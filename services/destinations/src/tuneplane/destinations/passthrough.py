"""Passthrough configuration (a sink's ``config``, ``spec.extensions``) as the collector
reads it, and what in it is refused because it would reach past its sink:

- Expansion. The collector's confmap replaces ``${env:X}``, ``${X}``, ``${file:/p}``,
  ``${http:...}`` (any provider) in every value, and older releases ``$X`` too; a pair
  ``$$`` is one literal ``$``. So every ``$`` is written doubled; an odd one is refused.
- Files. A field naming a file or directory (``FILE_KEY``, and ``path`` of the ``file``
  exporter) is a path relative to the sink's own directory under the secrets root,
  resolved there when composed; an absolute path or one leaving it is refused, and so is
  any other value naming the secrets root. An extension's files lie in the directory of
  the sink it is named for (``<type>/<sink>``); one the sinks share reads no file.
- Extensions. A value naming an extension of the destination names one of the sink's own
  (composed for it, or named for it) or one the destination's sinks share. A value is
  compared as the collector reads a component id (``component_id``: the spaces around
  its type and its name trimmed), so ``"bearertokenauth / prod "`` names
  ``bearertokenauth/prod``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

from tuneplane.destinations.redaction import MARK

#: Keys whose value is a file or directory the component reads or writes.
FILE_KEY = re.compile(r"^(filename|file|directory|dir)$|_(file|files|dir|directory)$")
#: Component types whose ``path`` is a file.
PATH_IS_FILE = frozenset({"file", "file_storage"})
DOLLARS = re.compile(r"\$+")


class Refused(ValueError):
    """A passthrough value refused; the message starts with the field's path."""


def component_id(text: str) -> str:
    """``text`` as the collector reads a component id (``component.ID.UnmarshalText``):
    cut at the first ``/``, the type and the name each trimmed of white space (Go's
    ``strings.TrimSpace``; ``str.strip`` trims those and a few more, so a value is never
    taken for another id than the collector's)."""
    kind, slash, name = text.partition("/")
    return f"{kind.strip()}{slash}{name.strip()}"


def is_file_field(component: str, key: str) -> bool:
    return bool(FILE_KEY.search(key)) or (key == "path" and component in PATH_IS_FILE)


def expansion(text: str) -> str | None:
    """What the collector would expand in ``text`` (a ``${...}`` shown up to its ``}``
    without a default value, which may be a secret; otherwise a lone ``$``), or None when
    every ``$`` is doubled."""
    for run in DOLLARS.finditer(text):
        if len(run.group()) % 2:
            rest = text[run.end():]
            close = rest.find("}")
            if rest.startswith("{") and 0 < close <= 80:
                shown, default, _ = rest[:close].partition(":-")
                return f"${shown}{':-...' if default else ''}}}"
            return "${" if rest.startswith("{") else "$"
    return None


def refuse_expansion(where: str, text: str) -> None:
    found = expansion(text)
    if found is None:
        return
    if found.startswith("${"):
        raise Refused(f"{where}: {found!r} would be expanded by the collector (environment, "
                      "file, http and other providers are refused); write '$$' for a "
                      "literal '$'")
    raise Refused(f"{where}: a single '$' is refused (the collector expands '${{...}}', "
                  "and older releases '$NAME'); write '$$' for a literal '$'")


def check_text(where: str, text: str) -> None:
    """A value as the collector is given it: nothing it would expand, and not the stand-in
    answers show for a secret (a document read back and applied as it was)."""
    refuse_expansion(where, text)
    if MARK in text:
        raise Refused(f"{where}: {MARK!r} stands for a secret in answers; give the value "
                      "itself")


def keys(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, key) for every mapping key under ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{path}.{key}", key
            yield from keys(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from keys(value, f"{path}[{i}]")


def values(node: Any, path: str, key: str = "") -> Iterator[tuple[str, str, str]]:
    """(path, key, text) for every string value under ``node``; a list's items have the
    list's key."""
    if isinstance(node, dict):
        for k, value in node.items():
            yield from values(value, f"{path}.{k}", k)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from values(value, f"{path}[{i}]", key)
    elif isinstance(node, str):
        yield path, key, node


def names_root(text: str, root: str) -> bool:
    root = posixpath.normpath(root)
    return f"{root}/" in text or text == root or (
        text.startswith("/") and posixpath.normpath(text).startswith(f"{root}/"))


def relative_file(where: str, text: str) -> str:
    """``text`` as a normalised path inside the sink's directory; refused when absolute
    or leaving it."""
    if not text or text.startswith(("/", "~")) or "\0" in text:
        raise Refused(f"{where}: {text!r} is not a path relative to the sink's directory "
                      "(<secrets root>/<sink>/); files are given relative to it")
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        raise Refused(f"{where}: {text!r} leaves the sink's directory (<secrets root>/"
                      "<sink>/); a sink reads and writes only files in its own")
    return normal


def check(node: Any, path: str, component: str, scope: str | None,
          owners: Mapping[str, str | None], root: str) -> None:
    """Refuse what in ``node`` (the passthrough of one component of type ``component``,
    belonging to sink ``scope``, or shared when None) would reach past it. ``owners``: the
    destination's extensions, each with the sink it belongs to (None: shared)."""
    for where, key in keys(node, path):
        refuse_expansion(where, key)
    for where, key, text in values(node, path):
        check_text(where, text)
        if is_file_field(component, key):
            if scope is None:
                raise Refused(f"{where}: an extension the sinks share reads no file; name "
                              "it <type>/<sink> to read files in that sink's directory")
            relative_file(where, text)
        elif names_root(text, root):
            raise Refused(f"{where}: names the secrets root ({root}); a sink's files are "
                          "given relative to its own directory, in file fields")
        named = component_id(text)
        if named in owners and owners[named] not in (None, scope):
            who = f"sink {scope!r}" if scope else "an extension the sinks share"
            raise Refused(f"{where}: {text!r} belongs to sink {owners[named]!r}; {who} names "
                          "only its own extensions and those the destination's sinks share")


def resolve(node: Any, component: str, directory: str | None, root: str, path: str,
            key: str = "") -> Any:
    """``node`` with every file field made a path in ``directory`` (the sink's, under
    ``root``); refuses a value naming ``root`` otherwise (checked again here: the root
    composed with may differ from the one checked when applied)."""
    if isinstance(node, dict):
        return {k: resolve(v, component, directory, root, f"{path}.{k}", k)
                for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(v, component, directory, root, f"{path}[{i}]", key)
                for i, v in enumerate(node)]
    if not isinstance(node, str):
        return node
    if is_file_field(component, key):
        if directory is None:
            raise Refused(f"{path}: an extension the sinks share reads no file")
        normal = relative_file(path, node)
        return directory if normal == "." else f"{directory}/{normal}"
    if names_root(node, root):
        raise Refused(f"{path}: names the secrets root ({root}); a sink's files are given "
                      "relative to its own directory, in file fields")
    return node
