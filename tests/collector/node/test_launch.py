"""What the node agent checks and writes before it starts anything of a launch."""

from __future__ import annotations

import json
import re
import shutil
import stat
from pathlib import Path

import pytest

from tuneplane.collector.node.client import NodeState, write_private
from tuneplane.collector.node.launch import Refused, prepare
from tuneplane.node.v1 import node_pb2 as pb


def launch(artifact: Path, spool_root: Path) -> pb.Launch:
    return pb.Launch(
        launch_id=7, run_id="run-a", attempt=2, member="rank-0", command=["true"],
        collector=pb.CollectorConfig(
            telemetry_target="gw.example:8444", trust_bundle_pem="CA PEM\n",
            server_name="gw.example", spool_root=str(spool_root), spool_bytes=1 << 20,
            drain_seconds=5, artifact_path=str(artifact), artifact_digest=artifact.name,
            integration_json='{"version": 1}'),
        token=pb.WorkloadToken(token="workload-token", expires_at=1))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_verified_launch_gets_private_configuration_and_its_collector_command(
        collector_artifact: Path, tmp_path: Path) -> None:
    prepared = prepare(launch(collector_artifact, tmp_path / "spool"), tmp_path / "launch")
    assert prepared.spool == tmp_path / "spool" / "run-a" / "2" / "rank-0"
    assert mode(prepared.spool) == 0o700
    assert mode(tmp_path / "spool") == 0o700
    assert mode(prepared.directory) == 0o700
    for name, content in (("token", "workload-token"), ("trust-bundle.pem", "CA PEM\n"),
                          ("integration.json", '{"version": 1}')):
        assert (prepared.directory / name).read_text() == content
        assert mode(prepared.directory / name) == 0o600
    assert prepared.collector[:2] == [str(collector_artifact / "bin" / "tuneplane-collector"),
                                      "run"]
    args = prepared.collector
    assert args[args.index("--token-file") + 1] == str(prepared.directory / "token")
    assert args[args.index("--server-name") + 1] == "gw.example"
    assert args[args.index("--attempt") + 1] == "2"
    recorded = json.loads((prepared.directory / "launch.json").read_text())
    assert recorded["collector"] == args


def test_an_artifact_other_than_the_one_launched_is_refused(
        collector_artifact: Path, tmp_path: Path) -> None:
    request = launch(collector_artifact, tmp_path / "spool")
    request.collector.artifact_digest = "f" * 64
    with pytest.raises(Refused, match="is not the one launched"):
        prepare(request, tmp_path / "launch")


@pytest.mark.parametrize(("change", "words"), [
    ("edit", "does not match its sha256 (tampered)"),
    ("add", "is not in the manifest (added)"),
    ("remove", "is missing"),
])
def test_a_tampered_artifact_is_refused_before_anything_is_made(
        collector_artifact: Path, tmp_path: Path, change: str, words: str) -> None:
    copy = tmp_path / "artifacts" / collector_artifact.name
    shutil.copytree(collector_artifact, copy, symlinks=True)
    launcher = copy / "bin" / "cli.py"
    if change == "edit":
        launcher.write_text(launcher.read_text().replace("main()", "main() or 0"))
    elif change == "add":
        (copy / "bin" / "sitecustomize.py").write_text("print('hello')\n")
    else:
        launcher.unlink()
    with pytest.raises(Refused, match=re.escape(words)):
        prepare(launch(copy, tmp_path / "spool"), tmp_path / "launch")
    assert not (tmp_path / "spool").exists()
    assert not (tmp_path / "launch").exists()


def test_a_spool_root_that_is_not_private_is_refused_with_no_fallback(
        collector_artifact: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-spool"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    (shared / "run-a" / "2").mkdir(parents=True)
    (shared / "run-a" / "2").chmod(0o777)
    (shared / "run-a" / "2" / "rank-0").mkdir(mode=0o755)
    with pytest.raises(Refused, match=r"spool grant refused: .* mode 0755; it must be 0700"):
        prepare(launch(collector_artifact, shared), tmp_path / "launch")
    assert not (tmp_path / "launch").exists()


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
