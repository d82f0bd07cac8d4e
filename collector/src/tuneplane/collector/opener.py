"""Source files opened with the training user's rights, not the collector's.

Under a node agent the collector runs as the agent's user (root, to switch users), which
may open any file of the host. A source is the training command's output, so it is opened
with the training user's rights: a reader process, forked before the collector starts any
thread, drops to that user and answers each path with an open descriptor (passed over a
Unix socket) or an errno. An artifact naming another tenant's file, or a training command
linking to one, gets what the training user could read itself and nothing more. Having
changed user, the reader is not dumpable: the training user cannot read its memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import socket
import threading
from pathlib import Path

from tuneplane.collector.fence import FLAGS, SourceRefused

PATH_BYTES = 8192


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
    os.setgroups(os.getgrouplist(entry.pw_name, entry.pw_gid))
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    if os.getuid() != entry.pw_uid or os.geteuid() != entry.pw_uid:
        raise PermissionError(f"still uid {os.geteuid()}")
    os.chdir("/")  # relative paths never come here; and nothing of the collector's is held


class Opener:
    """The collector's side: ``open(path)`` is a descriptor the training user could open."""

    def __init__(self, sock: socket.socket, pid: int, user: str) -> None:
        self._sock, self.pid, self.user = sock, pid, user
        self._lock = threading.Lock()

    @classmethod
    def start(cls, user: str) -> Opener:
        """Fork the reader as ``user``; call before any thread starts. Raises OSError."""
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise OSError(errno.EINVAL, f"--read-as {user}: no such user") from None
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
        opener = cls(ours, pid, user)
        hello = ours.recv(PATH_BYTES)
        if hello != b"ready":
            opener.close()
            raise OSError(errno.EPERM, f"cannot read sources as {user}: "
                          f"{hello.decode(errors='replace') or 'the reader exited'}")
        return opener

    def open(self, path: Path) -> int:
        gone: OSError | None = None
        with self._lock:
            try:
                self._sock.send(os.fsencode(path))
                message, fds, _, _ = socket.recv_fds(self._sock, PATH_BYTES, 1)
            except OSError as exc:
                message, fds, gone = b"", [], exc
        if fds:
            return fds[0]
        if not message.isdigit():
            raise SourceRefused(f"{path}: the reader running as {self.user} is gone "
                                f"({gone or 'it exited'}); sources cannot be read", errno.EPIPE)
        code = int(message)
        if code == errno.ENOENT:
            raise FileNotFoundError(code, os.strerror(code), str(path))
        raise SourceRefused(f"{path} cannot be opened as {self.user}: {os.strerror(code)}",
                            code)

    def close(self) -> None:
        self._sock.close()
        os.waitpid(self.pid, 0)
