"""What a launch needs before anything of it starts, checked and made in that order.

A launch is refused (the reason reported to control) when the collector artifact does not
verify against its manifest and digest, the run's integration artifact is unusable or gives
this member nothing to read, a source or the working directory resolves into the node
agent's state directory or the spool root, or the spool grant (private, host-local, inside
the configured root, no fallback) cannot be had. Relative source paths are the training
command's: they are read below its working directory, which is never inside the agent's
state directory, and with its user's rights (the collector's ``--read-as``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuneplane.collector import spoolroot
from tuneplane.collector.fence import inside
from tuneplane.collector.node.client import write_private
from tuneplane.collector.node.host import Host
from tuneplane.collector.node.runas import RunAs
from tuneplane.contract import artifact
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.integration import IntegrationError, check_document


class Refused(Exception):
    """The launch must not start; the message says why."""


@dataclass(frozen=True, slots=True)
class Prepared:
    directory: Path     # private: configuration, token, logs
    workdir: Path
    spool: Path
    collector: list[str]


def check_artifact(config: pb.CollectorConfig) -> Path:
    where = Path(config.artifact_path)
    if where.name != config.artifact_digest:
        raise Refused(f"collector artifact {where} is not the one launched "
                      f"({config.artifact_digest})")
    try:
        artifact.verify(where)
    except artifact.ArtifactError as exc:
        raise Refused(f"collector artifact refused: {exc}") from None
    return where


def fenced(host: Host, spool_root: Path) -> dict[str, Path]:
    """The places no source or working directory may resolve into, by what they are."""
    return {"the node agent's state directory": Path(os.path.realpath(host.state_dir)),
            "the spool root": Path(os.path.realpath(spool_root))}


def check_place(what: str, path: Path, forbidden: dict[str, Path]) -> None:
    real = Path(os.path.realpath(path))
    for name, directory in forbidden.items():
        if inside(real, directory):
            raise Refused(f"{what} {path} resolves to {real}, inside {name} {directory}; "
                          "training output is never read from there")


def given_directory(launch: pb.Launch) -> Path | None:
    """The existing working directory the launch names, if it names one."""
    if not launch.working_directory:
        return None
    workdir = Path(launch.working_directory)
    if not workdir.is_absolute() or not workdir.is_dir():
        raise Refused(f"working directory {workdir} is not an existing directory named by "
                      "an absolute path")
    return workdir


def wanted_user(launch: pb.Launch, users: Sequence[RunAs]) -> RunAs | None:
    """The run-as user the launch must wait for: the owner of the working directory it
    names (None: any user, it gets a new one)."""
    workdir = given_directory(launch)
    if workdir is None:
        return None
    owner = workdir.stat().st_uid
    found = next((user for user in users if user.uid == owner), None)
    if found is None:
        raise Refused(f"working directory {workdir} is uid {owner}'s, not a run-as user's "
                      f"({', '.join(user.name for user in users)})")
    return found


def working_directory(launch: pb.Launch, host: Host, run_as: RunAs,
                      forbidden: dict[str, Path]) -> Path:
    """The launch's own (``<work root>/<launch>``) unless it names an existing one, which
    must be its run-as user's."""
    workdir = given_directory(launch)
    if workdir is None:
        workdir = host.work_root / str(launch.launch_id)
        check_place("working directory", workdir, forbidden)
        if workdir.exists() or workdir.is_symlink():
            raise Refused(f"working directory {workdir} exists already; a launch gets a new one")
        return workdir
    check_place("working directory", workdir, forbidden)
    owner = workdir.stat().st_uid
    if owner != run_as.uid:
        raise Refused(f"working directory {workdir} is uid {owner}'s, not the run-as user "
                      f"{run_as.name}'s (uid {run_as.uid})")
    return workdir


def make_working_directory(workdir: Path, run_as: RunAs) -> None:
    """Private to the launch's run-as user: the training command's, and the collector's
    (root); no other launch's user enters it."""
    workdir.mkdir(mode=0o700)
    os.chmod(workdir, 0o700)
    if not run_as.same_user:
        os.chown(workdir, run_as.uid, run_as.gid)


def sources(launch: pb.Launch, workdir: Path, forbidden: dict[str, Path]) -> None:
    """The member's sources, relative ones below ``workdir``: none fenced, at least one.

    The artifact is checked, not compiled: channel schemas become code only in the
    launch's own collector, never in the agent every launch of the node shares."""
    try:
        document = json.loads(launch.collector.integration_json)
        check_document(document, "the run's integration artifact")
    except (ValueError, IntegrationError) as exc:
        raise Refused(f"integration artifact refused: {exc}") from None
    owned = [(entry["id"], workdir / entry["path"])  # an absolute path replaces workdir
             for entry in [*document["sources"], *document.get("channels", [])]
             if entry["owner"] == launch.member]
    if not owned:
        raise Refused(f"member {launch.member!r} owns no source in the run's integration "
                      "artifact")
    for source_id, path in owned:
        check_place(f"source {source_id}:", path, forbidden)


def prepare(launch: pb.Launch, launch_dir: Path, host: Host, run_as: RunAs) -> Prepared:
    """Verify, grant and write for the launch run as ``run_as``; raises Refused. Touches
    nothing outside the launch's places."""
    config = launch.collector
    where = check_artifact(config)
    spool_root = Path(config.spool_root)
    forbidden = fenced(host, spool_root)
    workdir = working_directory(launch, host, run_as, forbidden)
    sources(launch, workdir, forbidden)
    try:
        spool_dir = spoolroot.grant(spool_root, MemberKey(launch.run_id, launch.attempt,
                                                          launch.member))
    except (spoolroot.SpoolPlaceError, OSError) as exc:
        raise Refused(f"spool grant refused: {exc}") from None
    spoolroot.make_private(launch_dir, "launch directory")
    if not launch.working_directory:
        make_working_directory(workdir, run_as)
    write_private(launch_dir / "trust-bundle.pem", config.trust_bundle_pem)
    write_private(launch_dir / "token", launch.token.token)
    write_private(launch_dir / "integration.json", config.integration_json)
    collector = [str(where / artifact.PROGRAM), "run", "--run", launch.run_id,
                 "--attempt", str(launch.attempt), "--member", launch.member,
                 "--integration", str(launch_dir / "integration.json"),
                 "--workdir", str(workdir), "--spool", str(spool_dir),
                 *(arg for d in forbidden.values() for arg in ("--never-read", str(d))),
                 "--target", config.telemetry_target,
                 "--ca-file", str(launch_dir / "trust-bundle.pem"),
                 "--token-file", str(launch_dir / "token")]
    if config.server_name:
        collector += ["--server-name", config.server_name]
    if not run_as.same_user:  # sources are opened with the training user's rights
        # By number: the static collector reads no directory service the host's NSS does.
        groups = ",".join(str(g) for g in dict.fromkeys((run_as.gid, *run_as.groups)))
        collector += ["--read-as", f"{run_as.uid}:{run_as.gid}:{groups}"]
    write_private(launch_dir / "launch.json", json.dumps(
        {"launch": launch.launch_id, "run": launch.run_id, "attempt": launch.attempt,
         "member": launch.member, "command": list(launch.command), "collector": collector},
        indent=2))
    return Prepared(launch_dir, workdir, spool_dir, collector)
