"""Settings are read from the environment in one place per deployable: its CLI entry hands
``os.environ`` to its settings class's ``from_environ`` (or to ``flags.settings``, which
adds the flags given). Passing the environment on to a
child process (``{**os.environ, ...}``) is not reading a setting."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TypeGuard

from tests.support.environment import ROOT

SOURCES = [ROOT / "contract" / "src", *sorted((ROOT / "services").glob("*/src"))]


def is_os_environ(node: ast.AST) -> TypeGuard[ast.Attribute]:
    return isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
        isinstance(node.value, ast.Name) and node.value.id == "os"


def reads_settings(call: ast.Call) -> bool:
    """``X.from_environ(...)`` or ``flags.settings(X, ...)``."""
    func = call.func
    return isinstance(func, ast.Attribute) and (func.attr == "from_environ" or (
        func.attr == "settings" and isinstance(func.value, ast.Name) and
        func.value.id == "flags"))


def allowed(node: ast.AST, parent: ast.AST) -> bool:
    if isinstance(parent, ast.Call) and node in parent.args and reads_settings(parent):
        return True  # Settings.from_environ(os.environ), at a CLI entry
    # {**os.environ, ...}: the environment handed on to a child process
    return isinstance(parent, ast.Dict) and any(
        key is None and value is node for key, value in zip(parent.keys, parent.values,
                                                             strict=True))


def reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if is_os_environ(node) and not allowed(node, parents[node])]


def test_only_cli_entries_read_the_environment_into_settings() -> None:
    found = [place for source in SOURCES for path in sorted(source.rglob("*.py"))
             for place in reads(path)]
    assert not found, "settings read outside a settings class:\n" + "\n".join(found)


def builds_settings(path: Path) -> bool:
    return any(isinstance(node, ast.Call) and reads_settings(node) and
               any(map(is_os_environ, node.args))
               for node in ast.walk(ast.parse(path.read_text(), str(path))))


def test_each_deployable_builds_its_settings_in_its_cli_entry_only() -> None:
    calls = sorted(str(path.relative_to(ROOT)) for source in SOURCES
                   for path in source.rglob("*.py") if builds_settings(path))
    assert calls == ["services/admin/src/tuneplane/admin/cli.py",
                     # the Python client's entry is Client(): a library, not a command
                     "services/client/src/tuneplane/client/client.py",
                     "services/client/src/tuneplane/client/tool.py",
                     "services/control/src/tuneplane/control/cli.py",
                     "services/exporter/src/tuneplane/exporter/cli.py",
                     "services/exporter/src/tuneplane/exporter/kube/cli.py",
                     "services/ingest/src/tuneplane/ingest/cli.py",
                     "services/projector/src/tuneplane/projector/cli.py",
                     "services/web/src/tuneplane/web/cli.py"]
