"""Node control test helpers: enrollment, nodes, a run with two members, the CLI."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess

import asyncpg

from tests.support.environment import BIN
from tuneplane.controlplane import nodes, runs
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc

WORKLOAD_TTL = 60


async def enrollment_token(db: asyncpg.Connection, name: str,
                           ttl: dt.timedelta = dt.timedelta(minutes=5)) -> str:
    return await nodes.new_enrollment_token(db, name, created_by="test",
                                            now=dt.datetime.now(dt.UTC), ttl=ttl)


async def enroll(stub: pb_grpc.NodeControlAsyncStub, db: asyncpg.Connection,
                 name: str) -> pb.EnrollReply:
    reply: pb.EnrollReply = await stub.Enroll(pb.EnrollRequest(
        enrollment_token=await enrollment_token(db, name), hostname="test-host"), timeout=10)
    return reply


ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"},
    {"id": "eval", "kind": "jsonl", "path": "eval.jsonl", "owner": "rank-1"}]}


async def new_run(db: asyncpg.Connection, run_id: str) -> str:
    return await runs.create_run(db, json.loads(json.dumps(ARTIFACT)), created_by="test",
                                 now=dt.datetime.now(dt.UTC), run_id=run_id)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``tuneplane-control`` run as an operator runs it, with the test environment."""
    return subprocess.run([str(BIN / "tuneplane-control"), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, check=False, timeout=60)
