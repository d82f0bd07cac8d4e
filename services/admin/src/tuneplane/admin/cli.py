"""``tuneplane-admin``: set up storage, issue credentials, manage projects and runs, and look
at curves."""

from __future__ import annotations

import argparse
import os
import sys

from tuneplane.admin import (
    credentials,
    curves,
    lifecycle_status,
    project_commands,
    repack,
    run_commands,
    run_export,
    storage,
)
from tuneplane.admin.durability import command as durability
from tuneplane.admin.settings import AdminSettings
from tuneplane.contract.settings import SettingsError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-admin", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for commands in (storage, credentials, project_commands, lifecycle_status, run_commands,
                     run_export, curves, repack, durability):
        commands.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result = args.func(args, AdminSettings.from_environ(os.environ))
    except (SettingsError, ValueError, OSError) as exc:  # IntegrationError, MappingFrozen too
        print(f"tuneplane-admin {args.command}: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
