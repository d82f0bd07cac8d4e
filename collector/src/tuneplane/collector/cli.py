"""``tuneplane-collector``: read training telemetry beside a job and deliver it to ingest.

    tuneplane-collector run --run R --attempt N --member M --source ID=FILE.jsonl ...
    tuneplane-collector read PATH...        print every decoded record as JSON lines
    tuneplane-collector spool status DIR    what a spool holds

``run`` is ``run_command``'s; the rest is here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import orjson

from tuneplane.collector import spool
from tuneplane.collector.run_command import add_run, cmd_run
from tuneplane.collector.settings import CollectorSettings
from tuneplane.collector.spool import SpoolError
from tuneplane.contract.settings import SettingsError


def cmd_read(args: argparse.Namespace) -> int:
    def report(problem: str) -> None:
        print(problem, file=sys.stderr)

    from tuneplane.collector import records  # each command imports what it alone needs

    out = sys.stdout.buffer
    status = 0
    try:
        for path in args.paths:
            try:
                for record in records.records(path, report):
                    out.write(orjson.dumps(record) + b"\n")
            except BrokenPipeError:
                raise
            except (OSError, ValueError) as exc:
                print(f"tuneplane-collector read: {exc}", file=sys.stderr)
                status = 1
        out.flush()
    except BrokenPipeError:  # the reader had enough (`| head`): a normal end
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return status


def cmd_check(args: argparse.Namespace) -> int:
    from tuneplane.collector import integration

    try:
        artifact = integration.load(args.file)
    except integration.IntegrationError as exc:
        print(f"tuneplane-collector check: {exc}", file=sys.stderr)
        return 1
    for spec, owner in artifact.sources:
        print(f"{owner}\t{spec.kind.value}\t{spec.source_id}\t{spec.path}")
    print(f"{len(artifact.sources)} sources and channels, {len(artifact.mappings)} mappings: "
          "valid", file=sys.stderr)
    return 0


def cmd_spool_status(args: argparse.Namespace) -> int:
    try:
        print(json.dumps(spool.status(args.directory), indent=2))
    except SpoolError as exc:
        print(f"tuneplane-collector spool status: {exc}", file=sys.stderr)
        return 1
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-collector", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    add_run(sub)
    r = sub.add_parser("read", help="print every decoded record of PATHs as JSON lines",
                       description="Decode TensorBoard event files (a log directory or one "
                                   "file) and JSONL metric files, one JSON object per record. "
                                   "Damage goes to stderr; the exit status is non-zero only "
                                   "for unusable input.")
    r.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    r.set_defaults(func=cmd_read)
    c = sub.add_parser("check", help="validate an integration artifact; list who reads what")
    c.add_argument("file", type=Path)
    c.set_defaults(func=cmd_check)
    s = sub.add_parser("spool", help="look at a spool").add_subparsers(dest="spool_command",
                                                                      required=True)
    st = s.add_parser("status", help="pending and quarantined batches, source positions")
    st.add_argument("directory", type=Path, help="the member's spool directory")
    st.set_defaults(func=cmd_spool_status)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "run":
        result: int = args.func(args)
        return result
    try:
        settings = CollectorSettings.from_environ(os.environ)
    except SettingsError as exc:
        print(f"tuneplane-collector {args.command}: {exc}", file=sys.stderr)
        return 2
    return cmd_run(args, settings)


if __name__ == "__main__":
    sys.exit(main())
