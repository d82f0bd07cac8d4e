"""Which Unix user a project's Slurm jobs run as: the operator's mapping, never root."""

from __future__ import annotations

import pwd

import pytest

from tests.support.users import system_user
from tuneplane.control.slurm.users import JobUserError, JobUsers


def test_projects_map_to_their_users_and_a_bare_user_takes_the_rest() -> None:
    with system_user() as team, system_user() as other:
        users = JobUsers([f"vision={team.pw_name}", other.pw_name])
        assert users.of("vision").name == team.pw_name
        assert users.of("default").name == other.pw_name
        assert users.of("vision").sbatch_options() == [f"--uid={team.pw_uid}",
                                                       f"--gid={team.pw_gid}"]
        assert users.of("vision").environment() == {
            "HOME": team.pw_dir, "USER": team.pw_name, "LOGNAME": team.pw_name}
        only = JobUsers([f"vision={team.pw_name}"])
        with pytest.raises(JobUserError, match="project 'default' has no Unix user for its "
                                               "Slurm jobs; control needs --slurm-run-as "
                                               "default=USER"):
            only.of("default")
        with pytest.raises(JobUserError, match="names project 'vision' twice"):
            JobUsers([f"vision={team.pw_name}", f"vision={other.pw_name}"])


def test_root_and_unknown_users_are_refused() -> None:
    root = pwd.getpwuid(0).pw_name
    with pytest.raises(JobUserError, match=f"--slurm-run-as {root}: training never runs as "
                                           "root"):
        JobUsers([f"vision={root}"])
    with pytest.raises(JobUserError, match="--slurm-run-as nobody-here-x: no such user"):
        JobUsers(["nobody-here-x"])
