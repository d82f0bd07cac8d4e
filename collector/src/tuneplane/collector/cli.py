"""``tuneplane-collector``: read training telemetry beside a job and deliver it to ingest."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from tuneplane.collector.collector import Collector, CollectorConfig
from tuneplane.collector.reader import SourceSpec
from tuneplane.collector.sender import Target
from tuneplane.collector.spool import Owner, SpoolError
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES, MAX_BATCH_POINTS


def source_spec(text: str) -> SourceSpec:
    source_id, sep, path = text.partition("=")
    if not sep or not source_id or not path:
        raise argparse.ArgumentTypeError(f"--source wants ID=PATH, got {text!r}")
    return SourceSpec(source_id, Path(path))


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw.strip() else default
    except ValueError:
        raise SystemExit(
            f"tuneplane-collector: {name} must be a whole number, got {raw!r}") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tuneplane-collector",
        description="Read JSONL metric files, spool sealed batches in a private host-local "
                    "SQLite spool and send them to ingest over TLS. Nothing is deleted from "
                    "the spool before ingest confirms Kafka holds it.")
    p.add_argument("--run", required=True, help="run id")
    p.add_argument("--attempt", type=int, required=True, help="attempt number (1, 2, ...)")
    p.add_argument("--member", required=True, help="member identity, e.g. rank-0")
    p.add_argument("--source", type=source_spec, action="append", required=True,
                   metavar="ID=PATH", help="a JSONL metrics file this member owns (repeatable)")
    p.add_argument("--spool", type=Path,
                   help="this member's spool directory (default: "
                        "TUNEPLANE_TELEMETRY_SPOOL_ROOT/<run>/<attempt>/<member>)")
    p.add_argument("--target", default=os.environ.get("TUNEPLANE_TELEMETRY_TARGET"),
                   help="ingest address host:port (default TUNEPLANE_TELEMETRY_TARGET)")
    p.add_argument("--ca-file", type=Path, default=os.environ.get(
        "TUNEPLANE_TELEMETRY_TRUST_BUNDLE"), help="CA bundle that signs the ingest certificate")
    p.add_argument("--token-file", type=Path, required=True,
                   help="file holding the workload token (re-read on every send)")
    p.add_argument("--server-name", help="TLS name to verify when it differs from --target")
    p.add_argument("--max-batch-points", type=int, default=10_000,
                   help=f"points per batch (default 10000, at most {MAX_BATCH_POINTS})")
    p.add_argument("--exit-when-idle", action="store_true",
                   help="exit once every source is read to its end and the spool is empty")
    p.add_argument("--loglevel", default="INFO")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if args.spool is None and os.environ.get("TUNEPLANE_TELEMETRY_SPOOL_ROOT"):
        args.spool = (Path(os.environ["TUNEPLANE_TELEMETRY_SPOOL_ROOT"]) / args.run
                      / str(args.attempt) / args.member)
    for name, setting in (("spool", "TUNEPLANE_TELEMETRY_SPOOL_ROOT"),
                          ("target", "TUNEPLANE_TELEMETRY_TARGET"),
                          ("ca_file", "TUNEPLANE_TELEMETRY_TRUST_BUNDLE")):
        if getattr(args, name) is None:
            print(f"tuneplane-collector: give --{name.replace('_', '-')} or set {setting}",
                  file=sys.stderr)
            return 2
    if not 1 <= args.max_batch_points <= MAX_BATCH_POINTS:
        print(f"tuneplane-collector: --max-batch-points must be 1..{MAX_BATCH_POINTS}",
              file=sys.stderr)
        return 2
    config = CollectorConfig(
        owner=Owner(args.run, args.attempt, args.member),
        spool_dir=args.spool,
        target=Target(args.target, args.ca_file, args.token_file, args.server_name),
        sources=args.source,
        max_batch_points=args.max_batch_points,
        max_batch_bytes=MAX_BATCH_BYTES * 3 // 4,
        spool_bytes=env_int("TUNEPLANE_TELEMETRY_SPOOL_BYTES", 256 * 1024 * 1024),
        drain_seconds=env_int("TUNEPLANE_TELEMETRY_DRAIN_SECONDS", 30),
    )
    try:
        collector = Collector(config)
    except (SpoolError, OSError) as exc:
        print(f"tuneplane-collector: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: collector.stop())
    signal.signal(signal.SIGINT, lambda *_: collector.stop())
    left = collector.run(exit_when_idle=args.exit_when_idle)
    collector.close()
    logging.getLogger("tuneplane.collector").info(
        "collector done: %d points read, %d sent, %d problems, %d batches not delivered",
        collector.reader.points_read, collector.sender.sent_points,
        len(collector.reader.problems), left)
    return 0 if left == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
