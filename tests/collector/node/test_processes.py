"""What a run-as user still runs, and ending all of it before the user serves again."""

from __future__ import annotations

import signal
import subprocess
import time

from tests.support.users import system_user
from tuneplane.collector.node.processes import end_all, live_uids, owners, processes_of
from tuneplane.collector.node.runas import resolve


def test_a_process_is_the_user_s_by_any_of_its_ids_and_a_zombie_is_no_one_s() -> None:
    assert owners("Name:\tsu\nState:\tS (sleeping)\nUid:\t1001\t0\t0\t0\n") == {1001, 0}
    assert owners("Name:\tsleep\nState:\tZ (zombie)\nUid:\t1001\t1001\t1001\t1001\n") == set()


def test_every_process_of_the_user_ends_even_a_loop_forking_in_its_own_session() -> None:
    with system_user() as user:
        run_as = resolve(user.pw_name, allow_same_user=False)
        spawner = subprocess.Popen(
            ["/bin/sh", "-c", "while :; do sleep 60 & sleep 0.01; done"],
            user=user.pw_uid, group=user.pw_gid, extra_groups=[], start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while len(processes_of(user.pw_uid)) < 5:
                assert time.monotonic() < deadline, "the loop never forked"
                time.sleep(0.05)
            assert user.pw_uid in live_uids()
            assert end_all(run_as, timeout=10) == []
            assert processes_of(user.pw_uid) == []
            assert spawner.wait(timeout=10) == -signal.SIGKILL
        finally:
            spawner.kill()
            spawner.wait()
