"""What the node agent checks and writes before it starts anything of a launch."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.support.users import public_place, system_user
from tuneplane.collector.node.client import NodeState, write_private
from tuneplane.collector.node.host import Host
from tuneplane.collector.node.pool import UserPool
from tuneplane.collector.node.prepare import Refused, prepare, wanted_user
from tuneplane.collector.node.runas import resolve
from tuneplane.node.v1 import node_pb2 as pb

SAME_USER = resolve(None, allow_same_user=True)
SOURCES = [{"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"},
           {"id": "tb", "kind": "tensorboard", "path": "/data/tb", "owner": "rank-0"},
           {"id": "eval", "kind": "jsonl", "path": "eval.jsonl", "owner": "rank-1"}]


def artifact_with(**changes: Any) -> dict[str, Any]:
    return {"version": 1, "sources": [dict(s) for s in SOURCES], **changes}


def launch(artifact: Path, spool_root: Path, integration: dict[str, Any] | None = None,
           member: str = "rank-0") -> pb.Launch:
    return pb.Launch(
        launch_id=7, run_id="run-a", attempt=2, member=member, command=["true"],
        collector=pb.CollectorConfig(
            telemetry_target="gw.example:8444", trust_bundle_pem="CA PEM\n",
            server_name="gw.example", spool_root=str(spool_root), spool_bytes=1 << 20,
            drain_seconds=5, artifact_path=str(artifact), artifact_digest=artifact.name,
            integration_json=json.dumps(integration or artifact_with())),
        token=pb.WorkloadToken(token="workload-token", expires_at=1))


@pytest.fixture
def host(tmp_path: Path) -> Host:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "node.json").write_text("{}")
    (state / "launches").mkdir(mode=0o700)
    (tmp_path / "work").mkdir(mode=0o711)
    return Host(state, tmp_path / "work", UserPool([SAME_USER]))


def launch_dir(host: Host) -> Path:
    return host.state_dir / "launches" / "7"


def everything(root: Path) -> set[Path]:
    return {Path(d) / n for d, dirs, files in os.walk(root) for n in [*dirs, *files]}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_verified_launch_gets_private_configuration_and_its_collector_command(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    prepared = prepare(launch(collector_artifact, tmp_path / "spool"), launch_dir(host), host,
                       SAME_USER)
    assert prepared.spool == tmp_path / "spool" / "run-a" / "2" / "rank-0"
    assert mode(prepared.spool) == 0o700
    assert mode(tmp_path / "spool") == 0o700
    assert mode(prepared.directory) == 0o700
    assert prepared.workdir == host.work_root / "7"
    assert prepared.workdir.is_dir()
    assert not prepared.workdir.is_relative_to(prepared.directory)
    for name, content in (("token", "workload-token"), ("trust-bundle.pem", "CA PEM\n"),
                          ("integration.json", json.dumps(artifact_with()))):
        assert (prepared.directory / name).read_text() == content
        assert mode(prepared.directory / name) == 0o600
    assert prepared.collector[:2] == [str(collector_artifact / "tuneplane-collector"),
                                      "run"]
    args = prepared.collector
    assert args[args.index("--token-file") + 1] == str(prepared.directory / "token")
    assert args[args.index("--server-name") + 1] == "gw.example"
    assert args[args.index("--attempt") + 1] == "2"
    assert args[args.index("--workdir") + 1] == str(prepared.workdir)
    never = [args[i + 1] for i, arg in enumerate(args) if arg == "--never-read"]
    assert never == [str(host.state_dir.resolve()), str((tmp_path / "spool").resolve())]
    recorded = json.loads((prepared.directory / "launch.json").read_text())
    assert recorded["collector"] == args


def test_an_artifact_other_than_the_one_launched_is_refused(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    request = launch(collector_artifact, tmp_path / "spool")
    request.collector.artifact_digest = "f" * 64
    with pytest.raises(Refused, match="is not the one launched"):
        prepare(request, launch_dir(host), host, SAME_USER)


@pytest.mark.parametrize(("change", "words"), [
    ("edit", "does not match its sha256 (tampered)"),
    ("add", "is not in the manifest (added)"),
    ("remove", "is missing"),
])
def test_a_tampered_artifact_is_refused_before_anything_is_made(
        collector_artifact: Path, tmp_path: Path, host: Host, change: str, words: str) -> None:
    copy = tmp_path / "artifacts" / collector_artifact.name
    shutil.copytree(collector_artifact, copy, symlinks=True)
    binary = copy / "tuneplane-collector"
    if change == "edit":
        with binary.open("r+b") as edited:
            edited.seek(4096)
            edited.write(b"\xcc")
    elif change == "add":
        (copy / "libc.so.6").write_text("not the host's\n")
    else:
        binary.unlink()
    with pytest.raises(Refused, match=re.escape(words)):
        prepare(launch(copy, tmp_path / "spool"), launch_dir(host), host, SAME_USER)
    assert not (tmp_path / "spool").exists()
    assert not launch_dir(host).exists()
    assert not (host.work_root / "7").exists()


def test_a_spool_root_that_is_not_private_is_refused_with_no_fallback(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    shared = tmp_path / "shared-spool"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    with pytest.raises(Refused, match=r"spool grant refused: spool root .* mode 0755; it must "
                                      r"be 0700"):
        prepare(launch(collector_artifact, shared), launch_dir(host), host, SAME_USER)
    assert not launch_dir(host).exists()
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize("path", ["{state}/node.json", "{state}/launches/8/token",
                                  "../../state/launches/7/token", "{spool}/run-a/2/rank-0"])
def test_a_source_path_into_the_agents_state_or_the_spool_is_refused(
        collector_artifact: Path, tmp_path: Path, host: Host, path: str) -> None:
    sources = artifact_with()["sources"]
    sources[0]["path"] = path.format(state=host.state_dir, spool=tmp_path / "spool")
    before = everything(tmp_path)
    with pytest.raises(Refused, match=r"source train: .* resolves to .*, inside the (node "
                                      r"agent's state directory|spool root) .*; training "
                                      r"output is never read from there"):
        prepare(launch(collector_artifact, tmp_path / "spool", artifact_with(sources=sources)),
                launch_dir(host), host, SAME_USER)
    assert everything(tmp_path) == before  # nothing made: no spool, workdir, launch files


def test_a_working_directory_linking_into_the_agents_state_is_refused(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    given = tmp_path / "given"
    given.mkdir()
    (given / "metrics.jsonl").symlink_to(host.state_dir / "node.json")
    request = launch(collector_artifact, tmp_path / "spool")
    request.working_directory = str(given)
    with pytest.raises(Refused, match=r"source train: .*given/metrics.jsonl resolves to "
                                      r".*state/node.json, inside the node agent's state"):
        prepare(request, launch_dir(host), host, SAME_USER)
    request.working_directory = str(host.state_dir / "launches")
    with pytest.raises(Refused, match=r"working directory .*/state/launches resolves to .*, "
                                      r"inside the node agent's state directory"):
        prepare(request, launch_dir(host), host, SAME_USER)
    assert not (tmp_path / "spool").exists()


def test_an_owner_that_is_a_path_is_refused_and_nothing_is_made_outside_the_spool_root(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    sources = artifact_with()["sources"]
    sources[0]["owner"] = "../../x"
    before = everything(tmp_path)
    with pytest.raises(Refused, match=r"integration artifact refused: .*sources\[0\].owner "
                                      r"'../../x' is not a name: 1-128 of"):
        prepare(launch(collector_artifact, tmp_path / "spool", artifact_with(sources=sources),
                       member="../../x"), launch_dir(host), host, SAME_USER)
    assert everything(tmp_path) == before


def test_a_channel_schema_with_a_remote_ref_is_refused(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    channel = {"id": "samples", "path": "samples.jsonl", "owner": "rank-0",
               "max_record_bytes": 64, "max_bytes_per_minute": 64,
               "schema": {"items": [{"$ref": "file:///etc/passwd"}]}}
    with pytest.raises(Refused, match=re.escape(
            "integration artifact refused: the run's integration artifact: "
            "channels[0].schema.items[0].$ref is 'file:///etc/passwd': only local references")):
        prepare(launch(collector_artifact, tmp_path / "spool", artifact_with(
            channels=[channel])), launch_dir(host), host, SAME_USER)


def test_a_member_owning_nothing_is_refused(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    with pytest.raises(Refused, match="member 'rank-9' owns no source"):
        prepare(launch(collector_artifact, tmp_path / "spool", member="rank-9"),
                launch_dir(host), host, SAME_USER)


def test_each_launchs_working_directory_is_its_run_as_users_and_no_one_elses(
        collector_artifact: Path, tmp_path: Path, host: Host) -> None:
    with system_user() as first, system_user() as second, public_place() as place:
        users = [resolve(user.pw_name, allow_same_user=False) for user in (first, second)]
        (place / "work").mkdir(mode=0o711)
        pool_host = Host(host.state_dir, place / "work", UserPool(users))
        for launch_id, member, run_as in ((7, "rank-0", users[0]), (8, "rank-1", users[1])):
            request = launch(collector_artifact, tmp_path / "spool", member=member)
            request.launch_id = launch_id
            prepared = prepare(request, host.state_dir / "launches" / str(launch_id),
                               pool_host, run_as)
            info = prepared.workdir.stat()
            assert (info.st_uid, info.st_gid, mode(prepared.workdir)) == (run_as.uid,
                                                                         run_as.gid, 0o700)
            args = prepared.collector
            # By number: the static collector reads no directory service the host's NSS does.
            groups = ",".join(map(str, dict.fromkeys((run_as.gid, *run_as.groups))))
            assert args[args.index("--read-as") + 1] == f"{run_as.uid}:{run_as.gid}:{groups}"
            for path in (prepared.directory, *prepared.directory.iterdir(), prepared.spool):
                assert path.stat().st_uid == os.geteuid(), path
        theirs = place / "theirs"
        theirs.mkdir()
        request = launch(collector_artifact, tmp_path / "spool")
        request.launch_id, request.working_directory = 9, str(theirs)
        with pytest.raises(Refused, match=rf"working directory {theirs} is uid {os.geteuid()}'s,"
                                          rf" not a run-as user's \({first.pw_name}, "
                                          rf"{second.pw_name}\)"):
            wanted_user(request, users)
        os.chown(theirs, second.pw_uid, second.pw_gid)
        assert wanted_user(request, users) == users[1]  # it waits for that user alone
        with pytest.raises(Refused, match=rf"working directory {theirs} is uid {second.pw_uid}'s,"
                                          rf" not the run-as user {first.pw_name}'s"):
            prepare(request, host.state_dir / "launches" / "9", pool_host, users[0])


def test_state_and_token_files_are_replaced_whole_and_private(tmp_path: Path) -> None:
    write_private(tmp_path / "token", "first")
    write_private(tmp_path / "token", "second")
    assert (tmp_path / "token").read_text() == "second"
    assert mode(tmp_path / "token") == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["token"]  # no temporary left behind
    NodeState("gw:8443", "/ca.pem", "node-1", "tok").save(tmp_path)
    assert NodeState.load(tmp_path) == NodeState("gw:8443", "/ca.pem", "node-1", "tok")
    assert mode(tmp_path / "node.json") == 0o600
    with pytest.raises(SystemExit, match="enroll first"):
        NodeState.load(tmp_path / "elsewhere")
