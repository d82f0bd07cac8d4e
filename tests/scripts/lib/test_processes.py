"""scripts/lib/processes.py against real short-lived processes: start in the background
with a log and a pid file, wait until healthy, the errors of a timeout and of an early exit
(naming the log), stop by pid (a process ignoring SIGTERM too, a whole group), kill, and
stale pid files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.lib.ports import free_port, port_open
from scripts.lib.processes import (
    NotHealthy,
    PidFile,
    ProcessError,
    alive,
    children,
    kill,
    leads_group,
    run,
    spawn,
    status_line,
    stop,
    wait_until,
)

#: Serves TCP on argv[1] after a short pause, printing what it does.
SERVER = """
import os, socket, sys, time
time.sleep(0.3)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
print("listening as", os.environ.get("GREETING"), flush=True)
while True:
    server.accept()[0].close()
"""
#: Ignores SIGTERM, says so, then waits to be killed.
STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ignoring SIGTERM", flush=True)
time.sleep(600)
"""
#: Starts a grandchild in its own process group, prints its pid, waits.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("child", child.pid, flush=True)
time.sleep(600)
"""


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def logged(log: Path, text: str) -> bool:
    return log.exists() and text in log.read_text()


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Path]:
    """A folder for logs and pid files; whatever a test left running there is killed."""
    yield tmp_path
    for pidfile in tmp_path.glob("*.pid"):
        pid = PidFile(pidfile).running()
        if pid is not None and pid != os.getpid() and leads_group(pid):
            os.killpg(pid, signal.SIGKILL)


def test_spawn_writes_the_pid_and_logs_and_wait_until_sees_it_serve(place: Path) -> None:
    port, log, pidfile = free_port(), place / "server.log", PidFile(place / "server.pid")
    pid = spawn(python(SERVER, str(port)), log=log, pidfile=pidfile, env={"GREETING": "hello"})
    assert pidfile.read() == pid == pidfile.running()
    assert pidfile.path.read_text() == str(pid)  # the pid alone, as the scripts always wrote
    assert os.getpgid(pid) == pid  # a session (and group) of its own
    wait_until("server", lambda: port_open(port), seconds=20, log=log, process=pidfile)
    assert port_open(port)
    wait_until("server", lambda: logged(log, "listening as hello"), seconds=20, log=log)


def test_spawn_appends_to_the_log(place: Path) -> None:
    log, pidfile = place / "once.log", PidFile(place / "once.pid")
    log.write_text("earlier run\n")
    spawn(python("print('later run')"), log=log, pidfile=pidfile)
    wait_until("once", lambda: logged(log, "later run"), seconds=20, log=log)
    assert log.read_text().startswith("earlier run\n")


def test_spawn_of_a_missing_program_names_it(place: Path) -> None:
    with pytest.raises(ProcessError, match="no-such-program-here"):
        spawn(["no-such-program-here"], log=place / "x.log", pidfile=PidFile(place / "x.pid"))
    assert not (place / "x.pid").exists()


def test_the_deadline_error_names_the_log_and_shows_its_tail(place: Path) -> None:
    log, pidfile = place / "quiet.log", PidFile(place / "quiet.pid")
    spawn(python("print('still warming up', flush=True); import time; time.sleep(600)"),
          log=log, pidfile=pidfile)
    wait_until("quiet", lambda: logged(log, "warming"), seconds=20, log=log)
    started = time.monotonic()
    with pytest.raises(NotHealthy) as caught:
        wait_until("quiet", lambda: False, seconds=1, log=log, process=pidfile)
    assert 1 <= time.monotonic() - started < 10
    message = str(caught.value)
    assert message.startswith(f"quiet did not become healthy in 1s; log {log}:\n")
    assert message.endswith("still warming up\n")


def test_the_tail_is_the_end_of_a_long_log(place: Path) -> None:
    log = place / "long.log"
    log.write_text("x" * 10_000 + "the end")
    with pytest.raises(NotHealthy) as caught:
        wait_until("long", lambda: False, seconds=0, log=log)
    assert str(caught.value).endswith("x" * 1993 + "the end")
    assert "x" * 2001 not in str(caught.value)


def test_without_a_log_the_error_says_so(place: Path) -> None:
    with pytest.raises(NotHealthy, match=r"log .*absent\.log:\n\(no log\)$"):
        wait_until("absent", lambda: False, seconds=0, log=place / "absent.log")


def test_a_process_that_exits_fails_the_wait_at_once(place: Path) -> None:
    log, pidfile = place / "crash.log", PidFile(place / "crash.pid")
    spawn(python("import sys; print('bad config', flush=True); sys.exit(3)"), log=log,
          pidfile=pidfile)
    started = time.monotonic()
    with pytest.raises(NotHealthy) as caught:
        wait_until("crash", lambda: False, seconds=60, log=log, process=pidfile)
    assert time.monotonic() - started < 20  # not the deadline
    assert str(caught.value).startswith(f"crash exited before it became healthy; log {log}:")
    assert "bad config" in str(caught.value)


def test_stop_ends_the_process_and_removes_its_pid_file(place: Path) -> None:
    port, log, pidfile = free_port(), place / "server.log", PidFile(place / "server.pid")
    pid = spawn(python(SERVER, str(port)), log=log, pidfile=pidfile)
    wait_until("server", lambda: port_open(port), seconds=20, log=log, process=pidfile)
    started = time.monotonic()
    assert stop(pidfile, grace=20)
    assert time.monotonic() - started < 10  # SIGTERM did it, no wait for the grace
    assert not alive(pid)
    assert not pidfile.path.exists()
    assert not port_open(port)


def test_stop_kills_a_process_that_ignores_sigterm_after_the_grace(place: Path) -> None:
    log, pidfile = place / "stubborn.log", PidFile(place / "stubborn.pid")
    pid = spawn(python(STUBBORN), log=log, pidfile=pidfile)
    wait_until("stubborn", lambda: logged(log, "ignoring SIGTERM"), seconds=20, log=log)
    started = time.monotonic()
    assert stop(pidfile, grace=1)
    assert time.monotonic() - started >= 1
    assert not alive(pid)
    assert not pidfile.path.exists()


def test_stop_without_escalation_leaves_it_running_and_says_so(place: Path) -> None:
    log, pidfile = place / "stubborn.log", PidFile(place / "stubborn.pid")
    pid = spawn(python(STUBBORN), log=log, pidfile=pidfile)
    wait_until("stubborn", lambda: logged(log, "ignoring SIGTERM"), seconds=20, log=log)
    assert not stop(pidfile, grace=0.5, escalate=False)
    assert alive(pid)
    assert pidfile.read() == pid  # still known: a later stop finds it


def test_stop_signals_the_whole_group(place: Path) -> None:
    log, pidfile = place / "parent.log", PidFile(place / "parent.pid")
    pid = spawn(python(PARENT), log=log, pidfile=pidfile)
    wait_until("parent", lambda: logged(log, "child "), seconds=20, log=log)
    grandchild = int(log.read_text().split()[1])
    assert children(pid) == [grandchild]
    assert stop(pidfile)
    deadline = time.monotonic() + 10
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_stop_of_the_process_alone_spares_its_group(place: Path) -> None:
    log, pidfile = place / "parent.log", PidFile(place / "parent.pid")
    spawn(python(PARENT), log=log, pidfile=pidfile)
    wait_until("parent", lambda: logged(log, "child "), seconds=20, log=log)
    grandchild = int(log.read_text().split()[1])
    try:
        assert stop(pidfile, group=False)
        assert alive(grandchild)
    finally:
        os.kill(grandchild, signal.SIGKILL)


def test_kill_ends_it_without_a_clean_shutdown(place: Path) -> None:
    log, pidfile = place / "stubborn.log", PidFile(place / "stubborn.pid")
    pid = spawn(python(STUBBORN), log=log, pidfile=pidfile)
    wait_until("stubborn", lambda: logged(log, "ignoring SIGTERM"), seconds=20, log=log)
    kill("stubborn", pidfile, log=log)
    assert not alive(pid)
    assert not pidfile.path.exists()


def test_a_stale_pid_file_reads_as_not_running_and_is_cleared(place: Path) -> None:
    log, pidfile = place / "gone.log", PidFile(place / "gone.pid")
    pid = spawn(python("pass"), log=log, pidfile=pidfile)
    deadline = time.monotonic() + 20
    while alive(pid) and time.monotonic() < deadline:  # exited: a zombie until reaped
        time.sleep(0.05)
    assert pidfile.read() == pid
    assert pidfile.running() is None
    assert stop(pidfile)
    assert not pidfile.path.exists()
    pidfile.write(pid)
    kill("gone", pidfile, log=log)
    assert not pidfile.path.exists()


def test_a_pid_reused_by_a_process_outside_its_own_group_is_never_signalled(
        place: Path) -> None:
    """A pid file from before a reboot may name a pid some other process has now; one
    ``spawn`` started leads its own group, so a pid that does not is left alone."""
    other = subprocess.Popen(python("import time; time.sleep(600)"))
    try:
        pidfile = PidFile(place / "reused.pid")
        pidfile.write(other.pid)
        assert pidfile.running() == other.pid
        assert stop(pidfile, grace=0.5)
        kill("reused", PidFile(pidfile.path), log=place / "reused.log")
        assert other.poll() is None
        assert not pidfile.path.exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("content", ["", "not a pid\n", "   \n"])
def test_a_pid_file_without_a_pid_reads_as_none(place: Path, content: str) -> None:
    pidfile = PidFile(place / "odd.pid")
    pidfile.path.write_text(content)
    assert pidfile.read() is None
    assert pidfile.running() is None


def test_a_pid_file_a_daemon_wrote_is_read_by_its_first_word(place: Path) -> None:
    pidfile = PidFile(place / "daemon.pid")
    pidfile.path.write_text(f"{os.getpid()}\n/var/lib/data\n")  # postmaster.pid's shape
    assert pidfile.running() == os.getpid()
    assert PidFile(place / "missing.pid").read() is None


def test_alive_counts_a_zombie_as_gone() -> None:
    child = subprocess.Popen(python("pass"))
    deadline = time.monotonic() + 20
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not alive(child.pid)  # exited, not yet reaped
    child.wait()
    assert alive(os.getpid())


def test_run_returns_stdout_and_names_what_failed() -> None:
    assert run("echo", python("print('out')")) == "out\n"
    assert run("stdin", python("import sys; print(sys.stdin.read().upper())"),
               input="abc") == "ABC\n"
    with pytest.raises(ProcessError) as caught:
        run("building it", python("import sys; sys.exit('went wrong')"))
    assert str(caught.value).startswith(f"building it: {sys.executable} -c ")
    assert str(caught.value).endswith("failed: went wrong")
    with pytest.raises(ProcessError, match=r"^missing: no-such-program-here failed: "):
        run("missing", ["no-such-program-here"])


def test_status_lines_are_tab_separated() -> None:
    assert status_line("kafka", True, "127.0.0.1:1234") == "kafka\trunning\t127.0.0.1:1234"
    assert status_line("munged", False) == "munged\tstopped"
