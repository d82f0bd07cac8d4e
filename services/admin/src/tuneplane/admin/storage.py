"""``tuneplane-admin`` storage commands: migrations, topics, the bucket (``init``: all three)."""

from __future__ import annotations

import argparse
import asyncio

from tuneplane.admin.migrate import apply_migrations
from tuneplane.admin.settings import AdminSettings
from tuneplane.common import objectstore
from tuneplane.common.kafka import topics


def cmd_migrate(args: argparse.Namespace, settings: AdminSettings) -> None:
    applied = apply_migrations(settings.database_url.get())
    print(f"migrations applied: {', '.join(applied) or 'none (up to date)'}")


def cmd_topics(args: argparse.Namespace, settings: AdminSettings) -> None:
    created = asyncio.run(topics.ensure_topics(settings.kafka_bootstrap.get(), settings.topics))
    print(f"topics created: {', '.join(created) or 'none (all exist)'}")


def cmd_bucket(args: argparse.Namespace, settings: AdminSettings) -> None:
    bucket = settings.s3_bucket.get()
    client = objectstore.s3_client(settings.s3_endpoint.get())
    created = objectstore.ensure_bucket(client, bucket)
    print(f"bucket {bucket}: {'created' if created else 'exists'}")


def cmd_init(args: argparse.Namespace, settings: AdminSettings) -> None:
    cmd_migrate(args, settings)
    cmd_topics(args, settings)
    cmd_bucket(args, settings)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("init", help="apply migrations, create topics and the bucket (idempotent)")\
        .set_defaults(func=cmd_init)
    sub.add_parser("migrate", help="apply PostgreSQL migrations (safe from many replicas)")\
        .set_defaults(func=cmd_migrate)
    sub.add_parser("topics", help="create the Kafka topics with explicit settings")\
        .set_defaults(func=cmd_topics)
    sub.add_parser("bucket", help="create the S3 bucket").set_defaults(func=cmd_bucket)
