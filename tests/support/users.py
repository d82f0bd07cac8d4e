"""Real, separate users for tests of what training code (run as another user) can reach.

Making users needs root; CI runs as root, so a test that needs it fails, never skips,
when it is not. Every user and directory made here is removed afterwards.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: A Python every user may run (the project's may live under a private home).
SYSTEM_PYTHON = Path("/usr/bin/python3")


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        pytest.fail(f"{what} needs root (to make users and switch to them); run the tests as "
                    f"root, as CI does (this is uid {os.geteuid()})", pytrace=False)
    if not SYSTEM_PYTHON.exists():
        pytest.fail(f"{what} needs {SYSTEM_PYTHON}, a Python every user may run",
                    pytrace=False)


@contextmanager
def system_user(alias_of: pwd.struct_passwd | None = None) -> Iterator[pwd.struct_passwd]:
    """A new unprivileged system user with no home (a second name of ``alias_of``'s uid
    when given), deleted afterwards."""
    require_root("a test with separate users")
    name = f"tuneplane-train-test-{uuid.uuid4().hex[:8]}"
    alias = ["--non-unique", "--uid", str(alias_of.pw_uid)] if alias_of else []
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    *alias, name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=True, capture_output=True)


@contextmanager
def public_place() -> Iterator[Path]:
    """A directory every user may pass through (0711), outside pytest's private tmp (0700
    parents): where a work root and programs for another user go."""
    place = Path(tempfile.mkdtemp(prefix="tuneplane-users-", dir="/tmp"))
    try:
        place.chmod(0o711)
        yield place
    finally:
        shutil.rmtree(place)


def readable_copy(program: Path, place: Path) -> Path:
    """``program`` copied where every user may read it."""
    programs = place / "programs"
    programs.mkdir(mode=0o755, exist_ok=True)
    programs.chmod(0o755)
    copy = programs / program.name
    shutil.copyfile(program, copy)
    copy.chmod(0o644)
    return copy
