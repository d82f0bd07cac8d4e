"""The node agent (`tuneplane-collector node`) refuses a host it cannot run launches on
safely, before it calls control, each refusal naming what and where: a state directory or
node credential open to others, a work root overlapping the state, writable by others or out
of a training user's reach, and run-as users that are the agent itself, root, unknown, or one
user under two names. Launches themselves are `tests/e2e/test_node_launch.py`'s."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from tests.support.collector_binary import HOST_TARGET, run
from tests.support.users import public_place, system_user

PREFIX = "tuneplane-collector node run: "


def node_run(state: Path, work: Path, *flags: str) -> tuple[int, str]:
    """`node run` with no node.json: a host it accepts fails only on the missing enrollment."""
    done = run(HOST_TARGET, "node", "run", "--state-dir", str(state), "--work-root", str(work),
               *flags)
    return done.returncode, done.stderr.decode()


def refused(state: Path, work: Path, *flags: str) -> str:
    code, error = node_run(state, work, *flags)
    assert code == 2, error
    assert error.startswith(PREFIX), error
    assert error.endswith("\n"), error
    return error.removeprefix(PREFIX).rstrip("\n")


def test_an_accepted_host_gets_a_private_state_and_a_passable_work_root(tmp_path: Path) -> None:
    why = refused(tmp_path / "state", tmp_path / "work", "--allow-same-user")
    assert why == f"{tmp_path}/state/node.json not found; enroll first " \
                  "(`tuneplane-collector node enroll`)"
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "work").stat().st_mode) == 0o711


def test_a_work_root_overlapping_the_state_is_refused(tmp_path: Path) -> None:
    for work in (tmp_path / "state" / "work", tmp_path):
        why = refused(tmp_path / "state", work, "--allow-same-user")
        assert why.startswith(f"work root {work} and state directory {tmp_path}/state "
                              "overlap; training must reach its working directory"), why


def test_a_work_root_others_may_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work").chmod(0o777)
    why = refused(tmp_path / "state", tmp_path / "work", "--allow-same-user")
    assert why.endswith(f"writable by it alone (it is uid {os.geteuid()}, mode 0777)"), why


def test_a_state_directory_or_credential_open_to_others_is_refused(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state").chmod(0o755)
    why = refused(tmp_path / "state", tmp_path / "work", "--allow-same-user")
    assert why == f"state directory {tmp_path}/state is mode 0755; it must be 0700 " \
                  "(private to the collector user)"
    (tmp_path / "state").chmod(0o700)
    (tmp_path / "state" / "node.json").write_text("{}")
    (tmp_path / "state" / "node.json").chmod(0o644)
    why = refused(tmp_path / "state", tmp_path / "work", "--allow-same-user")
    assert why.startswith(f"node credential {tmp_path}/state/node.json must be the agent's"), why
    assert why.endswith("mode 0644"), why
    assert not (tmp_path / "work").exists()  # refused before anything is made


def test_a_work_root_a_training_user_cannot_reach_is_refused_naming_that_user(
        tmp_path: Path) -> None:
    with system_user() as first, system_user() as second, public_place() as place:
        pool = ("--run-as", first.pw_name, "--run-as", second.pw_name)
        hidden = tmp_path / "deep" / "work"  # pytest's tmp: its parents are private to root
        why = refused(tmp_path / "state", hidden, *pool)
        assert why.startswith(f"the run-as user {first.pw_name} cannot reach the work root "
                              f"{hidden}: "), why
        assert why.endswith("mode 0700"), why
        gate = place / "gate"  # only the first user's group may pass
        gate.mkdir()
        os.chown(gate, os.geteuid(), first.pw_gid)
        gate.chmod(0o710)
        why = refused(tmp_path / "state", gate / "work", *pool)
        assert why == f"the run-as user {second.pw_name} cannot reach the work root " \
                      f"{gate}/work: {gate} is uid 0 gid {first.pw_gid} mode 0710"
        why = refused(tmp_path / "state", place / "work", *pool)
        assert why.endswith("node.json not found; enroll first (`tuneplane-collector node "
                            "enroll`)"), why


def test_training_never_runs_as_the_agent_itself_or_root_unless_allowed(tmp_path: Path) -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    for flags in ((), ("--run-as", me), ("--run-as", "root")):
        why = refused(tmp_path / "state", tmp_path / "work", *flags)
        assert why.startswith(f"training would run as the agent's own user {me} (uid "
                              f"{os.geteuid()}), which can read the node credential"), why
        assert why.endswith("or --allow-same-user on a single-user workstation"), why
    assert not (tmp_path / "work").exists()


def test_a_pool_is_refused_naming_the_user_given_twice_unknown_or_under_two_names(
        tmp_path: Path) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    with system_user() as first, system_user(alias_of=first) as alias, \
            system_user() as second, public_place() as place:
        why = refused(state, work, "--run-as", first.pw_name, "--run-as", second.pw_name,
                      "--run-as", first.pw_name)
        assert why == f"--run-as {first.pw_name} is given twice; each launch gets a user of " \
                      "its own, so name each user once"
        why = refused(state, work, "--run-as", first.pw_name, "--run-as", alias.pw_name)
        assert why.startswith(f"--run-as {alias.pw_name} is uid {first.pw_uid}, the same user "
                              f"as --run-as {first.pw_name}"), why
        why = refused(state, work, "--run-as", first.pw_name, "--run-as", "root",
                      "--allow-same-user")
        assert why.startswith("--run-as root: the agent's own user cannot be in a pool with "
                              "others"), why
        why = refused(state, work, "--run-as", f"{first.pw_name},{second.pw_name}")
        assert why == f"--run-as {first.pw_name},{second.pw_name}: no such user on this host " \
                      "(give each user of a pool its own --run-as)"
        why = refused(state, work, "--run-as", first.pw_name, "--run-as", "no-such-user-x")
        assert why.startswith("--run-as no-such-user-x: no such user on this host"), why
        # A directory-service user, which a static binary cannot look up, by number.
        code, error = node_run(state, place / "work", "--run-as",
                               f"{first.pw_uid}:{first.pw_gid}")
        assert code == 2, error
        assert error.endswith("node.json not found; enroll first (`tuneplane-collector node "
                              "enroll`)\n"), error
    assert not work.exists()  # every refusal came before the work root was made
