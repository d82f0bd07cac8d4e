"""Training runs as its own unprivileged user, with its working directory, its environment
and nothing else; the agent's own user only when told."""

from __future__ import annotations

import errno
import json
import os
import pwd
import stat
from pathlib import Path

import pytest

from tests.support.users import SYSTEM_PYTHON, public_place, system_user
from tuneplane.collector.node.cli import main
from tuneplane.collector.node.runas import PASSED_ON, RunAsError, resolve, resolve_pool

PROBE = """
import json, os
try:
    open("/proc/self/fd/1", "rb")
    reopened = 0
except OSError as exc:
    reopened = exc.errno
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
                  "cwd": os.getcwd(), "fds": sorted(map(int, os.listdir("/proc/self/fd"))),
                  "session_leader": os.getsid(0) == os.getpid(), "reopened": reopened,
                  "env": dict(os.environ)}))
"""


def test_the_agents_own_user_is_refused_unless_allowed() -> None:
    me = pwd.getpwuid(os.geteuid()).pw_name
    for name in (None, me):
        with pytest.raises(RunAsError, match=rf"training would run as the agent's own user "
                                             rf"{me} \(uid {os.geteuid()}\), which can read the "
                                             r"node credential.*--allow-same-user"):
            resolve(name, allow_same_user=False)
    allowed = resolve(None, allow_same_user=True)
    assert (allowed.name, allowed.same_user) == (me, True)
    with pytest.raises(RunAsError, match="--run-as no-such-user-x: no such user on this host"):
        resolve("no-such-user-x", allow_same_user=True)


def test_the_cli_refuses_to_start_as_its_own_user_with_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--state-dir", str(tmp_path / "state"), "--work-root",
                 str(tmp_path / "work")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tuneplane-node run: training would run as the agent's own user")
    assert not (tmp_path / "work").exists()


def test_the_environment_is_the_launchs_not_the_agents(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENT_SECRET", "s3cret")
    monkeypatch.setenv("TUNEPLANE_TELEMETRY_TRUST_BUNDLE", "/var/lib/tuneplane/ca.pem")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    run_as = resolve(None, allow_same_user=True)
    env = run_as.environment(tmp_path, {"EPOCHS": "3", "PATH": "/opt/bin"},
                             {"TUNEPLANE_MEMBER": "rank-0"})
    assert env == {**{k: os.environ[k] for k in PASSED_ON if k in os.environ},
                   "PATH": "/opt/bin", "HOME": run_as.home, "USER": run_as.name,
                   "LOGNAME": run_as.name, "PWD": str(tmp_path), "EPOCHS": "3",
                   "TUNEPLANE_MEMBER": "rank-0"}


def test_training_starts_as_the_user_with_nothing_of_the_agents(tmp_path: Path) -> None:
    with system_user() as user, public_place() as place:
        run_as = resolve(user.pw_name, allow_same_user=False)
        assert not run_as.same_user
        workdir = place / "work"
        workdir.mkdir(mode=0o700)
        os.chown(workdir, user.pw_uid, user.pw_gid)
        secret = os.open(tmp_path / "held-open", os.O_CREAT | os.O_WRONLY, 0o600)
        os.set_inheritable(secret, True)  # even a descriptor marked inheritable stays behind
        try:
            training = run_as.start([str(SYSTEM_PYTHON), "-c", PROBE], workdir,
                                    run_as.environment(workdir, {}, {}), tmp_path / "log")
            assert training.wait(timeout=30) == 0
        finally:
            os.close(secret)
        log = tmp_path / "log"
        seen = json.loads(log.read_text())
        assert (seen["uid"], seen["gid"], seen["groups"]) == (user.pw_uid, user.pw_gid,
                                                              [user.pw_gid])
        assert seen["cwd"] == str(workdir)
        assert seen["fds"] == [0, 1, 2, 3]  # 3: the listing's own
        assert seen["session_leader"]
        assert seen["reopened"] == errno.EACCES  # its log is the agent's, write-only to it
        assert seen["env"]["HOME"] == user.pw_dir
        assert (log.stat().st_uid, stat.S_IMODE(log.stat().st_mode)) == (os.geteuid(), 0o600)


def test_root_is_never_a_run_as_user_of_another_agent_user() -> None:
    if os.geteuid() == 0:
        with pytest.raises(RunAsError, match="agent's own user root"):
            resolve("root", allow_same_user=False)
    else:
        with pytest.raises(RunAsError, match="--run-as root: training never runs as root"):
            resolve("root", allow_same_user=False)


def test_a_pool_is_refused_naming_the_user_given_twice_or_under_two_names() -> None:
    with system_user() as first, system_user(alias_of=first) as alias, \
            system_user() as second:
        with pytest.raises(RunAsError, match=rf"--run-as {first.pw_name} is given twice; each "
                                             r"launch gets a user of its own, so name each "
                                             r"user once"):
            resolve_pool([first.pw_name, second.pw_name, first.pw_name],
                         allow_same_user=False)
        with pytest.raises(RunAsError, match=rf"--run-as {alias.pw_name} is uid "
                                             rf"{first.pw_uid}, the same user as --run-as "
                                             rf"{first.pw_name}"):
            resolve_pool([first.pw_name, alias.pw_name], allow_same_user=False)
        with pytest.raises(RunAsError, match="training would run as the agent's own user "
                                             "root"):  # the tests run as root
            resolve_pool([first.pw_name, "root"], allow_same_user=False)
        with pytest.raises(RunAsError, match=r"--run-as root: the agent's own user cannot be "
                                             r"in a pool with others"):
            resolve_pool([first.pw_name, None], allow_same_user=True)
        with pytest.raises(RunAsError, match=rf"--run-as {first.pw_name},{second.pw_name}: no "
                                             r"such user on this host \(give each user of a "
                                             r"pool its own --run-as\)"):
            resolve_pool([f"{first.pw_name},{second.pw_name}"], allow_same_user=False)
        pool = resolve_pool([first.pw_name, second.pw_name], allow_same_user=False)
        assert [(u.name, u.uid) for u in pool] == [(first.pw_name, first.pw_uid),
                                                   (second.pw_name, second.pw_uid)]


def test_the_cli_names_the_pool_user_it_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with system_user() as first:
        assert main(["run", "--state-dir", str(tmp_path / "state"), "--work-root",
                     str(tmp_path / "work"), "--run-as", first.pw_name, "--run-as",
                     "no-such-user-x"]) == 2
    assert capsys.readouterr().err == ("tuneplane-node run: --run-as no-such-user-x: no such "
                                       "user on this host\n")
    assert not (tmp_path / "work").exists()
