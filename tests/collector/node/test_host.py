"""The node's places, checked when the agent starts: a private state directory and a work
root outside it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support.users import public_place, system_user
from tuneplane.collector.node.host import HostError, open_host
from tuneplane.collector.node.pool import UserPool
from tuneplane.collector.node.runas import resolve

SAME_USER = UserPool([resolve(None, allow_same_user=True)])


def test_the_work_root_is_made_passable_but_not_listable(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        host = open_host(tmp_path / "state", tmp_path / "work", SAME_USER)
    finally:
        os.umask(old)
    assert stat.S_IMODE(host.state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(host.work_root.stat().st_mode) == 0o711


@pytest.mark.parametrize("work", ["state/work", "."])
def test_a_work_root_overlapping_the_state_is_refused(tmp_path: Path, work: str) -> None:
    with pytest.raises(HostError, match=r"work root .* and state directory .* overlap; "
                                        r"training must reach its working directory"):
        open_host(tmp_path / "state", tmp_path / work, SAME_USER)


def test_a_work_root_others_may_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work").chmod(0o777)
    with pytest.raises(HostError, match=rf"writable by it alone \(it is uid {os.geteuid()}, "
                                        r"mode 0777\)"):
        open_host(tmp_path / "state", tmp_path / "work", SAME_USER)


def test_a_state_directory_open_to_others_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state").chmod(0o755)
    with pytest.raises(HostError, match=r"state directory .* is mode 0755; it must be 0700"):
        open_host(tmp_path / "state", tmp_path / "work", SAME_USER)


def test_a_work_root_a_training_user_cannot_reach_is_refused_naming_that_user(
        tmp_path: Path) -> None:
    with system_user() as first, system_user() as second, public_place() as place:
        users = [resolve(user.pw_name, allow_same_user=False) for user in (first, second)]
        hidden = tmp_path / "deep"  # pytest's tmp: its parents are private to root
        with pytest.raises(HostError, match=rf"the run-as user {first.pw_name} cannot reach the "
                                            r"work root .*/deep/work: .* mode 0700"):
            open_host(tmp_path / "state", hidden / "work", UserPool(users))
        gate = place / "gate"  # only the first user's group may pass
        gate.mkdir()
        os.chown(gate, os.geteuid(), first.pw_gid)
        gate.chmod(0o710)
        with pytest.raises(HostError, match=rf"the run-as user {second.pw_name} cannot reach "
                                            rf"the work root {gate}/work: {gate} is uid 0 gid "
                                            rf"{first.pw_gid} mode 0710"):
            open_host(tmp_path / "state", gate / "work", UserPool(users))
        host = open_host(tmp_path / "state", place / "work", UserPool(users))
        assert host.users.users == tuple(users)


def test_a_node_credential_open_to_others_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "node.json").write_text("{}")
    (tmp_path / "state" / "node.json").chmod(0o644)
    with pytest.raises(HostError, match=r"node credential .*node.json must be the agent's .* "
                                        r"and mode 0600; it is uid \d+, mode 0644"):
        open_host(tmp_path / "state", tmp_path / "work", SAME_USER)
