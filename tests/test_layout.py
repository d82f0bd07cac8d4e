"""The package map holds: who may import whom, and every import is declared.

- the contract (``contract/``) imports only itself (the collector, ``collector/binary``, is
  Rust: it compiles the contract's protos and imports no Python);
- common and the control plane import no service; no service imports another;
- a distribution that imports ``tuneplane.common.<x>`` declares ``tuneplane-common[x]``
  (each extra installs one adapter's client), and declares every workspace package it
  imports.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ("tuneplane.telemetry", "tuneplane.node", "tuneplane.tensorboard", "tuneplane.contract")


@dataclass(frozen=True)
class Package:
    directory: str
    modules: tuple[str, ...]  # the module prefixes this distribution owns
    may_import: tuple[str, ...]  # other distributions' directories it may import


PACKAGES = {p.directory: p for p in (
    Package("contract", CONTRACT, ()),
    Package("services/common", ("tuneplane.common",), ("contract",)),
    # The TelemetryDestination resource is pure: the services apply it, the client checks it.
    Package("services/destinations", ("tuneplane.destinations",), ()),
    Package("services/controlplane", ("tuneplane.controlplane",),
            ("contract", "services/common", "services/destinations")),
    *(Package(f"services/{name}", (f"tuneplane.{name}",),
              ("contract", "services/common", "services/destinations", "services/controlplane"))
      for name in ("admin", "ingest", "control", "exporter", "projector", "web")),
    # The Python client and the `tuneplane` command stand apart from every service: a
    # notebook installs httpx (and pyarrow), the command also the resource's checks.
    Package("services/client", ("tuneplane.client",), ("services/destinations",)),
)}


def owner(module: str) -> Package | None:
    for package in PACKAGES.values():
        if any(module == m or module.startswith(m + ".") for m in package.modules):
            return package
    return None


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {m for m in found if m.startswith("tuneplane.")}


def sources(package: Package) -> list[Path]:
    return [p for p in (ROOT / package.directory / "src").rglob("*.py")
            if not p.name.endswith(("_pb2.py", "_pb2_grpc.py"))]


def declared(package: Package) -> dict[str, set[str]]:
    """Workspace distributions the package depends on → the extras it asks for."""
    project = tomllib.loads((ROOT / package.directory / "pyproject.toml").read_text())
    out: dict[str, set[str]] = {}
    for requirement in project["project"].get("dependencies", []):
        match = re.match(r"(tuneplane-[a-z]+)(?:\[([a-z,]+)\])?", requirement)
        if match:
            out.setdefault(match[1], set()).update(filter(None, (match[2] or "").split(",")))
    return out


DISTRIBUTION = {"contract": "tuneplane-contract",
                **{d: "tuneplane-" + d.split("/")[1] for d in PACKAGES if "/" in d}}


@pytest.mark.parametrize("directory", sorted(PACKAGES))
def test_package_imports_only_what_the_map_allows(directory: str) -> None:
    package = PACKAGES[directory]
    wrong = sorted(f"{path.relative_to(ROOT)}: {module}"
                   for path in sources(package) for module in imports(path)
                   if (found := owner(module)) is None or (
                       found is not package and found.directory not in package.may_import))
    assert not wrong, "imports across the package map:\n" + "\n".join(wrong)


@pytest.mark.parametrize("directory", sorted(PACKAGES))
def test_package_declares_what_it_imports(directory: str) -> None:
    package, deps = PACKAGES[directory], declared(PACKAGES[directory])
    common_extras = set(tomllib.loads((ROOT / "services/common/pyproject.toml").read_text())
                        ["project"]["optional-dependencies"])
    missing: set[str] = set()
    for path in sources(package):
        for module in imports(path):
            found = owner(module)
            if found is None or found is package:
                continue
            if DISTRIBUTION[found.directory] not in deps:
                missing.add(DISTRIBUTION[found.directory])
            parts = module.split(".")
            if found.directory == "services/common" and len(parts) > 2 and \
                    parts[2] in common_extras and parts[2] not in deps["tuneplane-common"]:
                missing.add(f"tuneplane-common[{parts[2]}] (for {module})")
    assert not missing, f"{directory}/pyproject.toml does not declare: {sorted(missing)}"


def test_the_map_covers_every_workspace_member() -> None:
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    assert sorted(members["members"]) == sorted(PACKAGES)


def test_every_common_module_belongs_to_an_extra() -> None:
    """A module of common outside every extra would be importable without its client."""
    extras = set(tomllib.loads((ROOT / "services/common/pyproject.toml").read_text())
                 ["project"]["optional-dependencies"])
    top = ROOT / "services/common/src/tuneplane/common"
    names = {p.stem if p.is_file() else p.name for p in top.iterdir()
             if p.name not in ("__init__.py", "__pycache__")}
    assert names <= extras, f"modules of common outside any extra: {sorted(names - extras)}"


WEB = ROOT / "services/web/src/tuneplane/web"
SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
DATABASE_CALLS = ("fetch", "fetchrow", "fetchval", "execute", "executemany")


def database_work(path: Path) -> list[str]:
    """SQL text and direct database calls in a module, as ``path:line what``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                SQL.search(node.value):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} SQL text")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in DATABASE_CALLS:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}()")
    return found


def test_web_routes_hold_no_sql() -> None:
    """The web read path's SQL is behind named functions of ``web/read`` (or of the control
    plane); a route chooses no statement and passes no positional parameters to one."""
    found = [f for path in sorted((WEB / "routes").glob("*.py")) for f in database_work(path)]
    assert not found, "database work in routes:\n" + "\n".join(found)


def test_web_auth_and_read_import_no_route() -> None:
    """The web package's layers: routes use auth and read, never the other way."""
    wrong = sorted(f"{path.relative_to(ROOT)}: {module}"
                   for layer in ("auth", "read") for path in (WEB / layer).glob("*.py")
                   for module in imports(path) if module.startswith("tuneplane.web.routes"))
    assert not wrong, "\n".join(wrong)


def test_web_modules_live_in_their_layer() -> None:
    """Nothing of auth or of the read path is left at the top of the web package."""
    top = {p.stem for p in WEB.glob("*.py")}
    assert top == {"__init__", "app", "cli", "dependencies", "exceptions", "logs", "metrics",
                   "models", "openapi", "posts", "settings", "state"}, sorted(top)
