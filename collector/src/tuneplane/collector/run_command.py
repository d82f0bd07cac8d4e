"""``tuneplane-collector run``: its options, and the collector they assemble.

Sources come from flags and from the integration artifact (the sources and channels this
member owns, relative paths below ``--workdir``); the spool defaults to the member's
directory inside ``TUNEPLANE_TELEMETRY_SPOOL_ROOT``; ``--never-read`` fences directories
no source is read from (the node agent passes its state directory and the spool root), and
``--read-as`` opens sources with the training user's rights (``opener``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from tuneplane.collector import failpoints, spoolroot
from tuneplane.collector.collector import Collector, CollectorConfig
from tuneplane.collector.fence import Fence, open_plainly
from tuneplane.collector.opener import Opener
from tuneplane.collector.reader import SourceKind, SourceSpec
from tuneplane.collector.sender import Target
from tuneplane.collector.settings import CollectorSettings
from tuneplane.collector.spool import SpoolError
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
    p.add_argument("--workdir", type=Path, default=Path("."), metavar="DIR",
                   help="the training command's working directory: relative source paths of "
                        "--integration are read below it (default: the current directory)")
    p.add_argument("--never-read", type=Path, action="append", default=[], metavar="DIR",
                   help="a directory no source is read from, however its path resolves "
                        "(symbolic links included); repeatable. The node agent passes its "
                        "state directory and the spool root")
    p.add_argument("--read-as", metavar="USER",
                   help="open sources with USER's rights, not the collector's: the training "
                        "command's user, as the node agent passes it (needs root)")
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
        # Only here: YAML and JSON Schema are a start-up cost a plain run does not pay.
        from tuneplane.collector import integration

        try:
            owned = integration.load(args.integration).sources_of(args.member, args.workdir)
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
        try:
            args.spool = spoolroot.member_dir(root, MemberKey(args.run, args.attempt,
                                                              args.member))
        except spoolroot.SpoolPlaceError as exc:
            print(f"tuneplane-collector run: {exc}", file=sys.stderr)
            return 2
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
    try:  # before any thread: the reader process is forked
        opener = Opener.start(args.read_as) if args.read_as else None
    except OSError as exc:
        print(f"tuneplane-collector run: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        return collect(args, settings, sources, opener)
    finally:
        if opener is not None:
            opener.close()


def collect(args: argparse.Namespace, settings: CollectorSettings, sources: list[SourceSpec],
            opener: Opener | None) -> int:
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
        fence=Fence.of(args.never_read, opener.open if opener else open_plainly),
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
