"""``tuneplane-control``: the Node control service (8443) and its administration.

    tuneplane-control serve                          serve Node control over TLS
    tuneplane-control enrollment-token --node NAME   a one-time token to enroll a node
    tuneplane-control launch --run R --node N --member M -- CMD...
    tuneplane-control launch --backend slurm --run R --nodes 2 --tasks-per-node 4 -- CMD...
    tuneplane-control launch --backend kubernetes --run R --indexes 2 --image I -- CMD...
    tuneplane-control launches [--run R]             launches and their states
    tuneplane-control nodes | node-revoke NAME
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import sys

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.common.gateway import listener, shared_identity
from tuneplane.common.kube import Kubernetes
from tuneplane.common.metrics import exposition
from tuneplane.common.tokens import TokenSigner
from tuneplane.contract import flags
from tuneplane.contract.settings import SettingsError
from tuneplane.control import metrics
from tuneplane.control.arguments import parser
from tuneplane.control.calls import Policy
from tuneplane.control.gate import CallRate
from tuneplane.control.jobs import JobBackend
from tuneplane.control.kube.backend import KubernetesBackend
from tuneplane.control.kube.manifest import PodReach
from tuneplane.control.kube.placement import Namespaces, Spools, workdir_limit
from tuneplane.control.server import NodeControl, create_server
from tuneplane.control.settings import ControlSettings
from tuneplane.control.slurm.backend import Reach, SlurmBackend
from tuneplane.control.slurm.scheduler import Slurm
from tuneplane.control.slurm.service import SlurmJobControl
from tuneplane.control.slurm.users import JobUsers
from tuneplane.controlplane import (
    errors,
    kube_launches,
    launches,
    nodes,
    slurm_launches,
    slurm_nodes,
)
from tuneplane.controlplane.errors import NodeNotFound
from tuneplane.node.v1 import node_pb2 as pb

log = logging.getLogger("tuneplane.control")


async def collector_config(args: argparse.Namespace,
                           settings: ControlSettings) -> pb.CollectorConfig:
    """What every launch's collector is told, from the deployment's settings."""
    artifact = settings.collector_artifact.get()
    return pb.CollectorConfig(
        telemetry_target=settings.telemetry_target.get(),
        trust_bundle_pem=await listener.telemetry_trust_bundle(args, settings.gateway),
        server_name=args.telemetry_server_name or "",
        spool_root=str(settings.spool_root.get()),
        spool_bytes=settings.spool_bytes,
        drain_seconds=settings.drain_seconds,
        artifact_path=str(artifact), artifact_digest=artifact.name)


def call_rate(per_second: float) -> CallRate | None:
    """A node's call rate: ``per_second`` on average, four seconds' worth at once (0: none)."""
    return CallRate(per_second, max(1.0, 4 * per_second)) if per_second > 0 else None


async def keep_session(conn: Connection) -> None:
    """A pooled connection handed back as it is: control sets no session state, takes no
    advisory lock and listens to nothing, so asyncpg's reset query (a round trip per call)
    has nothing to undo; an open transaction is still rolled back by asyncpg itself."""


async def serve(args: argparse.Namespace, settings: ControlSettings) -> None:
    os.nice(settings.nice)  # telemetry first: Node control's calls can wait a scheduling slice
    credentials = await listener.credentials(args, settings.gateway)
    policy = Policy(await collector_config(args, settings),
                    workload_ttl=settings.workload_token_ttl,
                    heartbeat_seconds=settings.heartbeat_seconds,
                    call_rate=call_rate(settings.node_calls_per_second),
                    max_held=max(1, settings.max_concurrent_rpcs // 2))
    signer = TokenSigner(settings.jwt_secret.get())
    pool = await asyncpg.create_pool(settings.database_url, min_size=1,
                                     max_size=settings.db_pool, reset=keep_session)
    metrics.POOL.watch(pool)
    exposition.serve(settings.metrics_port, args.host)
    backends = await job_backends(args, settings, pool, policy)
    service = None
    if backends:
        service = SlurmJobControl(signer, pool, policy, {b.scheduler: b for b in backends})
        for backend in backends:
            backend.serve(service)
    server = create_server(NodeControl(signer, pool, policy),
                           max_concurrent_rpcs=settings.max_concurrent_rpcs, slurm=service)
    server.add_secure_port(f"{args.host}:{args.port}", credentials)
    await server.start()
    following = [asyncio.create_task(backend.run()) for backend in backends]
    log.info("control listening on %s:%d (TLS), %d calls at once, %d database connections, "
             "nice %d, %s calls/s per node", args.host, args.port, settings.max_concurrent_rpcs,
             settings.db_pool, os.nice(0), f"{settings.node_calls_per_second:g}"
             if settings.node_calls_per_second > 0 else "unlimited")
    await listener.serve_until_signalled(server, "control")
    for task in following:
        task.cancel()
    metrics.POOL.forget()
    await pool.close()


async def job_backends(args: argparse.Namespace, settings: ControlSettings,
                       pool: asyncpg.Pool, policy: Policy) -> list[JobBackend]:
    """With --slurm, the backend that submits and follows Slurm launches; with --kubernetes,
    the one of Kubernetes launches. Both serve their collectors through one job control
    service."""
    backends: list[JobBackend] = []
    if args.slurm:
        if not args.slurm_control_address:
            raise SettingsError("--slurm needs --slurm-control-address, the host:port the "
                                "cluster's compute nodes reach this service at")
        reach = Reach(control=args.slurm_control_address,
                      server_name=args.slurm_control_server_name or "",
                      control_ca_pem=policy.collector.trust_bundle_pem,
                      artifact=settings.collector_artifact.get(),
                      collector_environment=settings.collector_environment,
                      users=JobUsers(args.slurm_run_as))
        log.info("Slurm backend on: jobs' collectors reach control at %s", reach.control)
        backends.append(SlurmBackend(pool, Slurm(environ=settings.slurm_client_environment),
                                     reach, poll_seconds=settings.slurm_poll_seconds))
    if args.kubernetes:
        backends.append(await kubernetes_backend(args, settings, pool, policy))
    return backends


async def kubernetes_backend(args: argparse.Namespace, settings: ControlSettings,
                             pool: asyncpg.Pool, policy: Policy) -> KubernetesBackend:
    if not args.kubernetes_control_address:
        raise SettingsError("--kubernetes needs --kubernetes-control-address, the host:port "
                            "the launches' pods reach this service at")
    namespaces = Namespaces(args.kubernetes_namespace)
    if not namespaces.all():
        raise SettingsError("--kubernetes needs --kubernetes-namespace [PROJECT=]NAMESPACE: "
                            "where the projects' Jobs run")
    for shared in namespaces.shared():
        log.warning("Kubernetes namespace %s takes several projects' launches: whoever may "
                    "read its Secrets or make pods there can act for any of them", shared)
    artifact = settings.collector_artifact.get()
    reach = PodReach(
        control=args.kubernetes_control_address,
        server_name=args.kubernetes_control_server_name or "",
        control_ca_pem=policy.collector.trust_bundle_pem,
        image=args.kubernetes_collector_image or f"tuneplane-collector:{artifact.name}",
        digest=artifact.name,
        pull_policy=args.kubernetes_pull_policy,
        workdir_limit=workdir_limit(args.kubernetes_workdir_limit),
        spools=Spools(args.kubernetes_spool), drain_seconds=settings.drain_seconds,
        collector_environment=settings.collector_environment)
    log.info("Kubernetes backend on: Jobs in %s, sidecars from %s reach control at %s, "
             "spools on %s", ", ".join(namespaces.all()), reach.image, reach.control,
             ", ".join(map(str, reach.spools.chosen())))
    return KubernetesBackend(pool, await Kubernetes.connect(), namespaces, reach,
                             poll_seconds=settings.slurm_poll_seconds)


async def admin(args: argparse.Namespace, settings: ControlSettings) -> int:
    conn = await asyncpg.connect(settings.database_url)
    now = dt.datetime.now(dt.UTC)
    try:
        if args.command == "enrollment-token":
            print(await nodes.new_enrollment_token(
                conn, args.node, created_by="cli", now=now,
                ttl=dt.timedelta(seconds=args.ttl)))
        elif args.command == "launch":
            print(json.dumps(await launch(conn, args, settings)))
        elif args.command == "launches":
            for row in [*await launches.listing(conn, args.run),
                        *await slurm_nodes.listing(conn, args.run)]:
                print(json.dumps(row, default=str))
        elif args.command == "nodes":
            for row in await nodes.listing(conn):
                print(json.dumps(row, default=str))
        elif args.command == "node-scope":
            await nodes.scope(conn, args.node, None if args.any else args.project)
            print(f"node {args.node}: takes launches of "
                  + ("every project" if args.any else "project(s) " + ", ".join(args.project)))
        else:
            revoked = await nodes.revoke(conn, args.node, now=now)
            if not revoked.node and not revoked.cancelled:
                raise NodeNotFound(f"no enrolled node {args.node!r} to revoke, nor unused "
                                   "enrollment tokens for it")
            print(f"node {args.node}: " + ("revoked" if revoked.node else "not enrolled")
                  + f"; {revoked.cancelled} unused enrollment token(s) cancelled")
    finally:
        await conn.close()
    return 0


async def launch(conn: Connection, args: argparse.Namespace,
                 settings: ControlSettings) -> dict[str, object]:
    """Start the run's next attempt on a node, or queue it as a Slurm or Kubernetes job."""
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    environment = dict(item.split("=", 1) for item in args.env)
    if args.backend == "slurm":
        if args.node or args.member:
            raise errors.InvalidLaunch("--node and --member are the node backend's: a Slurm "
                                       "job's members are its tasks (rank-0, rank-1, ...)")
        spool_root = args.spool_root or str(settings.spool_root.get())
        queued = await slurm_launches.create(
            conn, args.run, nodes=args.nodes, tasks_per_node=args.tasks_per_node,
            command=command, environment=environment, spool_root=spool_root,
            options=slurm_launches.JobOptions(args.partition or "", args.time or "",
                                              args.workdir or "", not args.no_requeue))
        return {"run": args.run, "attempt": queued.attempt, "slurm_launch": queued.launch_id,
                "members": queued.members}
    if args.backend == "kubernetes":
        if not args.image:
            raise errors.InvalidLaunch("a Kubernetes launch needs --image, the training "
                                       "container's image")
        pod = kube_launches.PodSpec(args.image, dict(i.split("=", 1) for i in args.request),
                                    dict(i.split("=", 1) for i in args.limit),
                                    requeue=not args.no_requeue)
        queued = await kube_launches.create(conn, args.run, indexes=args.indexes, pod=pod,
                                            command=command, environment=environment)
        return {"run": args.run, "attempt": queued.attempt,
                "kubernetes_launch": queued.launch_id, "members": queued.members}
    if not args.node or not args.member:
        raise errors.InvalidLaunch("a node launch needs --node and at least one --member")
    attempt, ids = await launches.create(conn, args.run, args.node, args.member, command,
                                         environment)
    return {"run": args.run, "attempt": attempt, "launches": ids}


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    try:
        settings = flags.settings(ControlSettings, os.environ, args)
        if args.command == "serve":
            logging.basicConfig(level=args.loglevel.upper(),
                                format="%(asctime)s %(levelname)s %(name)s %(message)s")
            asyncio.run(serve(args, settings))
            return 0
        return asyncio.run(admin(args, settings))
    except (SettingsError, OSError, ValueError, shared_identity.IdentityError,
            errors.ControlPlaneError) as exc:
        print(f"tuneplane-control {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
