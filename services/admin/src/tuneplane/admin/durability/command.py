"""``tuneplane-admin durability``: what the deployment's stores, as they are, can claim of
the loss of one machine."""

from __future__ import annotations

import argparse
import asyncio
import sys

from tuneplane.admin.durability import claims, read, report
from tuneplane.admin.durability.facts import PARTS
from tuneplane.admin.settings import AdminSettings

#: Exit codes (2, a setting missing or malformed, is every command's).
REQUIREMENT_NOT_MET = 3
UNREADABLE = 4

DESCRIPTION = f"""\
Reads the stores this environment's settings point at (TUNEPLANE_KAFKA_BOOTSTRAP,
TUNEPLANE_DATABASE_URL, TUNEPLANE_S3_ENDPOINT and TUNEPLANE_S3_BUCKET: run it with the
services' own settings) and prints what each can claim of the loss of one machine:

  Kafka       its brokers, and of the batches topic, its dead-letter topic and the consumer
              offsets topic: replication, min.insync.replicas, unclean leader election and
              the replicas in sync now; judged for the loss of one broker and of one machine
              (told apart by broker.rack, else by advertised host: brokers on loopback share
              this machine)
  PostgreSQL  fsync, synchronous_commit, synchronous_standby_names and the standbys
              streaming from it (pg_stat_replication)
  S3          the endpoint and bucket: a loopback endpoint is on this machine; of any other
              the S3 API tells nothing

Each part survives (nothing acknowledged lost, writes go on), stops (nothing acknowledged
lost, writes refused), loses (something acknowledged can be lost) or is unknown.

exit codes:
  0  every store was read (and, with --require, the requirement is met)
  2  a setting is missing or malformed
  {REQUIREMENT_NOT_MET}  --require multi-machine is not met: the parts that fall short are named,
     with why
  {UNREADABLE}  a store could not be read: it is named, with the error
"""


def cmd_durability(args: argparse.Namespace, settings: AdminSettings) -> int:
    profile = asyncio.run(read.read_profile(
        settings.kafka_bootstrap.get(), settings.database_url.get(),
        settings.s3_endpoint.get(), settings.s3_bucket.get(), frozenset(args.assume)))
    assessment = claims.assess(profile)
    if args.json:
        print(report.as_json(profile, assessment))
    else:
        sys.stdout.write(report.as_text(profile, assessment))
    unreachable = profile.unreachable()
    for part in unreachable:
        print(f"tuneplane-admin durability: {part.part} could not be read: {part.error}",
              file=sys.stderr)
    if unreachable:
        return UNREADABLE
    if args.require == "multi-machine" and not assessment.multi_machine:
        short = "".join(f"\n  {c.part} {c.sentence()}: {c.reason}"
                        for c in assessment.failing())
        print(f"tuneplane-admin durability: --require multi-machine not met:{short}",
              file=sys.stderr)
        return REQUIREMENT_NOT_MET
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("durability", help="what the stores, as deployed, survive: Kafka's "
                                          "replication, PostgreSQL's synchronous standbys, "
                                          "the S3 endpoint",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--require", choices=["multi-machine"],
                   help="exit 3 unless every part survives the loss of one machine")
    p.add_argument("--assume", action="append", default=[], choices=PARTS, metavar="PART",
                   help=f"take PART's survival on the operator's word, where its store cannot "
                        f"show it (a managed service replicating below PostgreSQL, a "
                        f"replicated S3 service); one of {', '.join(PARTS)}, repeatable; "
                        f"printed as assumed")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document: each part's facts, the claims, "
                        "multi_machine")
    p.set_defaults(func=cmd_durability)
