"""Source files opened with the training user's rights, not the collector's.

Under a node agent the collector runs as the agent's user (root, to switch users), which
may open any file of the host. A source is the training command's output, so it is opened
with the training user's rights: a reader process, forked before the collector starts any
thread, drops to that user and answers each path with an open descriptor (passed over a
Unix socket) or an errno. An artifact naming another tenant's file, or a training command
linking to one, gets what the training user could read itself and nothing more. The
reader makes itself not dumpable once it is that user, so the training user cannot read its
memory or take it over; it can kill or stop it (it is that user's): a reader that is gone
or does not answer within ``timeout`` is killed and started again at the next open, so no
training command can stop another launch's reading for good.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import pwd
import signal
import socket
import threading
from pathlib import Path

from tuneplane.collector.fence import FLAGS, SourceRefused

log = logging.getLogger("tuneplane.collector")

PATH_BYTES = 8192
PR_SET_DUMPABLE = 4


def serve(sock: socket.socket) -> None:
    """The reader's loop: a path in, a descriptor (or an errno) out, until the end."""
    while request := sock.recv(PATH_BYTES):
        try:
            fd = os.open(os.fsdecode(request), FLAGS)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            sock.send(str(getattr(exc, "errno", None) or errno.EINVAL).encode())
            continue
        try:
            socket.send_fds(sock, [b"ok"], [fd])
        finally:
            os.close(fd)


def become(entry: pwd.struct_passwd) -> None:
    """Drop to ``entry``'s user and groups for good, and out of that user's reach."""
    os.setgroups(os.getgrouplist(entry.pw_name, entry.pw_gid))
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    if os.getuid() != entry.pw_uid or os.geteuid() != entry.pw_uid:
        raise PermissionError(f"still uid {os.geteuid()}")
    # Changing user already made it not dumpable unless fs.suid_dumpable=1 says otherwise.
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise PermissionError(f"prctl(PR_SET_DUMPABLE): {os.strerror(ctypes.get_errno())}")
    os.chdir("/")  # relative paths never come here; and nothing of the collector's is held


def fork_reader(entry: pwd.struct_passwd) -> tuple[socket.socket, int]:
    """The reader process as ``entry``'s user, and the collector's end of its socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:  # the reader: never returns into the collector's code
        code = 0
        try:
            ours.close()
            os.closerange(3, theirs.fileno())
            os.closerange(theirs.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
            become(entry)
            theirs.send(b"ready")
            serve(theirs)
        except BaseException as exc:  # told to the collector, if it still listens
            code = 1
            with contextlib.suppress(OSError):
                theirs.send(f"{type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(code)
    theirs.close()
    hello = ours.recv(PATH_BYTES)
    if hello != b"ready":
        ours.close()
        os.waitpid(pid, 0)
        raise OSError(errno.EPERM, f"cannot read sources as {entry.pw_name}: "
                      f"{hello.decode(errors='replace') or 'the reader exited'}")
    return ours, pid


class Opener:
    """The collector's side: ``open(path)`` is a descriptor the training user could open."""

    def __init__(self, entry: pwd.struct_passwd, timeout: float) -> None:
        self._entry, self._timeout = entry, timeout
        self.user = entry.pw_name
        self._sock, self.pid = fork_reader(entry)
        self._sock.settimeout(timeout)
        self._lock = threading.Lock()
        self.restarts = 0

    @classmethod
    def start(cls, user: str, timeout: float = 10.0) -> Opener:
        """Fork the reader as ``user``; call before any thread starts. Raises OSError."""
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise OSError(errno.EINVAL, f"--read-as {user}: no such user") from None
        return cls(entry, timeout)

    def _ask(self, path: Path) -> tuple[bytes, list[int]]:
        self._sock.send(os.fsencode(path))
        message, fds, _, _ = socket.recv_fds(self._sock, PATH_BYTES, 1)
        if not fds and not message:
            raise ConnectionResetError(errno.ECONNRESET, "the reader exited")
        return message, fds

    def _restart(self) -> None:
        """A reader that died (killed by the training user, say) is replaced. The fork is
        from a collector with threads: the child only makes system calls, then serves."""
        self._sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # stopped, or hung: it is replaced either way
        os.waitpid(self.pid, 0)
        self._sock, self.pid = fork_reader(self._entry)
        self._sock.settimeout(self._timeout)
        self.restarts += 1
        log.warning("the reader of sources as %s was gone; started it again (pid %d)",
                    self.user, self.pid)

    def open(self, path: Path) -> int:
        with self._lock:
            try:
                message, fds = self._ask(path)
            except OSError:
                try:
                    self._restart()
                    message, fds = self._ask(path)
                except OSError as exc:
                    raise SourceRefused(f"{path}: no reader can run as {self.user} ({exc}); "
                                        "sources cannot be read", errno.EPIPE) from None
        if fds:
            return fds[0]
        code = int(message) if message.isdigit() else errno.EIO
        if code == errno.ENOENT:
            raise FileNotFoundError(code, os.strerror(code), str(path))
        raise SourceRefused(f"{path} cannot be opened as {self.user}: {os.strerror(code)}",
                            code)

    def close(self) -> None:
        self._sock.close()  # the reader sees the end and exits; one stopped is ended
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
