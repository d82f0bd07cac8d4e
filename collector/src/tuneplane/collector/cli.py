"""``tuneplane-collector``: read training telemetry beside a job and deliver it to ingest.

    tuneplane-collector run --run R --attempt N --member M --source ID=FILE.jsonl ...
    tuneplane-collector read PATH...        print every decoded record as JSON lines
    tuneplane-collector spool status DIR    what a spool holds
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import orjson

from tuneplane.collector import artifact, failpoints, integration, records, spool
from tuneplane.collector.collector import Collector, CollectorConfig
from tuneplane.collector.reader import SourceKind, SourceSpec
from tuneplane.collector.sender import Target
from tuneplane.collector.settings import CollectorSettings
from tuneplane.collector.spool import SpoolError
from tuneplane.contract.settings import SettingsError
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES, MAX_BATCH_POINTS
from tuneplane.telemetry.v1.validation import name_problem


def source_spec(kind: SourceKind) -> Callable[[str], SourceSpec]:
    def parse(text: str) -> SourceSpec:
        source_id, sep, path = text.partition("=")
        if not sep or not source_id or not path:
            raise argparse.ArgumentTypeError(f"want ID=PATH, got {text!r}")
        if (problem := name_problem(source_id)) is not None:
            raise argparse.ArgumentTypeError(f"source id {problem}")
        return SourceSpec(source_id, Path(path), kind)
    return parse


def add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run", help="collect and send until stopped (SIGTERM drains, then exits)",
        description="Read the sources, spool sealed batches in a private host-local SQLite "
                    "spool and send them to ingest over TLS. Nothing leaves the spool before "
                    "ingest confirms Kafka holds it. SIGTERM reads the sources to their current "
                    "end and keeps sending for TUNEPLANE_TELEMETRY_DRAIN_SECONDS (30), leaving "
                    "the rest spooled.")
    p.add_argument("--run", required=True, help="run id")
    p.add_argument("--attempt", type=int, required=True, help="attempt number (1, 2, ...)")
    p.add_argument("--member", required=True, help="member identity, e.g. rank-0")
    p.add_argument("--source", type=source_spec(SourceKind.JSONL), action="append",
                   default=[], metavar="ID=FILE", help="a JSONL metrics file (repeatable)")
    p.add_argument("--tensorboard", type=source_spec(SourceKind.TENSORBOARD), action="append",
                   default=[], metavar="ID=LOGDIR",
                   help="a TensorBoard log directory: every *tfevents* file below it")
    p.add_argument("--integration", type=Path, metavar="FILE",
                   help="integration artifact (YAML or JSON): reads the sources and rich "
                        "channels whose owner is --member")
    p.add_argument("--spool", type=Path,
                   help="this member's spool directory (default: "
                        "TUNEPLANE_TELEMETRY_SPOOL_ROOT/<run>/<attempt>/<member>)")
    p.add_argument("--target",
                   help="ingest address host:port (default TUNEPLANE_TELEMETRY_TARGET)")
    p.add_argument("--ca-file", type=Path, help="CA bundle that signs the ingest certificate "
                                                "(default TUNEPLANE_TELEMETRY_TRUST_BUNDLE)")
    p.add_argument("--token-file", type=Path, required=True,
                   help="file holding the workload token (re-read on every send)")
    p.add_argument("--server-name", help="TLS name to verify when it differs from --target")
    p.add_argument("--max-batch-points", type=int, default=10_000,
                   help=f"points per batch (default 10000, at most {MAX_BATCH_POINTS})")
    p.add_argument("--max-in-flight", type=int, default=4,
                   help="batches on the wire at once (default 4)")
    p.add_argument("--exit-when-idle", action="store_true",
                   help="exit once every source is read to its end and the spool is empty")
    p.add_argument("--loglevel", default="INFO")


def cmd_run(args: argparse.Namespace, settings: CollectorSettings) -> int:
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    sources = [*args.source, *args.tensorboard]
    if args.integration is not None:
        try:
            owned = integration.load(args.integration).sources_of(args.member)
        except integration.IntegrationError as exc:
            print(f"tuneplane-collector run: {exc}", file=sys.stderr)
            return 2
        if not owned:
            print(f"tuneplane-collector run: member {args.member!r} owns no source in "
                  f"{args.integration}", file=sys.stderr)
            return 2
        sources += owned
    if not sources:
        print("tuneplane-collector run: give --integration, --source or --tensorboard",
              file=sys.stderr)
        return 2
    root = settings.spool_root.value
    if args.spool is None and root is not None:
        args.spool = root / args.run / str(args.attempt) / args.member
    args.target = args.target or settings.target.value
    args.ca_file = args.ca_file or settings.trust_bundle.value
    for name, setting in (("spool", settings.spool_root), ("target", settings.target),
                          ("ca_file", settings.trust_bundle)):
        if getattr(args, name) is None:
            print(f"tuneplane-collector run: give --{name.replace('_', '-')} or set "
                  f"{setting.name}", file=sys.stderr)
            return 2
    if not 1 <= args.max_batch_points <= MAX_BATCH_POINTS:
        print(f"tuneplane-collector run: --max-batch-points must be 1..{MAX_BATCH_POINTS}",
              file=sys.stderr)
        return 2
    failpoints.arm(settings.failpoints)
    config = CollectorConfig(
        owner=MemberKey(args.run, args.attempt, args.member),
        spool_dir=args.spool,
        target=Target(args.target, args.ca_file, args.token_file, args.server_name),
        sources=sources,
        max_batch_points=args.max_batch_points,
        max_batch_bytes=MAX_BATCH_BYTES * 3 // 4,
        spool_bytes=settings.spool_bytes,
        drain_seconds=settings.drain_seconds,
        in_flight=max(1, args.max_in_flight),
    )
    try:
        collector = Collector(config)
    except (SpoolError, OSError) as exc:
        print(f"tuneplane-collector run: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: collector.stop())
    signal.signal(signal.SIGINT, lambda *_: collector.stop())
    left = collector.run(exit_when_idle=args.exit_when_idle)
    collector.close()
    counters = collector.reader.counters
    logging.getLogger("tuneplane.collector").info(
        "collector done: %d points and %d rich records read, %d points sent, %d refused, "
        "%d problems, %d batches not delivered", counters.points, counters.rich,
        collector.sender.sent_points, counters.refused, counters.problems, left)
    return 0 if left == 0 else 3


def cmd_read(args: argparse.Namespace) -> int:
    def report(problem: str) -> None:
        print(problem, file=sys.stderr)

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


def cmd_artifact_build(args: argparse.Namespace) -> int:
    try:
        built = artifact.build(args.workspace.resolve(), args.out.resolve())
    except artifact.ArtifactError as exc:
        print(f"tuneplane-collector artifact build: {exc}", file=sys.stderr)
        return 1
    print(built)
    return 0


def cmd_artifact_verify(args: argparse.Namespace) -> int:
    try:
        host = artifact.Target.of_interpreter(args.python) if args.python else None
        manifest = artifact.verify(args.directory.resolve(), host)
    except artifact.ArtifactError as exc:
        print(f"tuneplane-collector artifact verify: refused: {exc}", file=sys.stderr)
        return 1
    target = manifest["target"]
    print(f"verified: {len(manifest['files'])} files, built for {target['os']} "
          f"{target['arch']} {target['libc']} {target['python_abi']}")
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
    a = sub.add_parser("artifact", help="build or verify the collector artifact")\
        .add_subparsers(dest="artifact_command", required=True)
    ab = a.add_parser("build", help="build the artifact for this host into OUT/<digest>")
    ab.add_argument("--workspace", type=Path, default=Path("."),
                    help="the Tuneplane source checkout (default: .)")
    ab.add_argument("--out", type=Path, required=True,
                    help="where content-addressed artifacts are kept")
    ab.set_defaults(func=cmd_artifact_build)
    av = a.add_parser("verify", help="check an artifact's digest, files and target")
    av.add_argument("directory", type=Path)
    av.add_argument("--python", help="the Python that will run it (default: this one)")
    av.set_defaults(func=cmd_artifact_verify)
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
        print(f"tuneplane-collector run: {exc}", file=sys.stderr)
        return 2
    return cmd_run(args, settings)


if __name__ == "__main__":
    sys.exit(main())
