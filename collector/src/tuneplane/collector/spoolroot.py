"""The spool's place: private to the collector user, durable and on a host-local filesystem.

Network and cluster filesystems are refused with an error naming the filesystem: their
locking and fsync semantics do not keep SQLite's promises, and a spool shared between
hosts would mix members. There is never a fallback to another directory.

A member's spool below a root is ``<root>/<run>/<attempt>/<member>``: each part must be a
name and the directory must stay inside the root (no ``..``, no absolute part, no symbolic
link out), checked before anything is created, so no run or artifact can place a spool
elsewhere.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.names import NAME_RULE, is_name

#: Filesystem types a spool may not live on (as /proc/self/mountinfo names them).
NETWORK_FILESYSTEMS = {
    "nfs": "NFS", "nfs4": "NFS", "cifs": "SMB/CIFS", "smb3": "SMB/CIFS", "smbfs": "SMB/CIFS",
    "lustre": "Lustre", "gpfs": "GPFS", "beegfs": "BeeGFS", "ceph": "CephFS", "9p": "9p",
    "afs": "AFS", "glusterfs": "GlusterFS", "gfs2": "GFS2", "ocfs2": "OCFS2",
    "orangefs": "OrangeFS", "pvfs2": "OrangeFS", "davfs": "WebDAV",
}
#: FUSE subtypes that reach over the network.
NETWORK_FUSE = {"sshfs", "s3fs", "gcsfuse", "ceph-fuse", "ceph", "glusterfs", "rclone",
                "juicefs", "goofys", "blobfuse", "blobfuse2", "davfs", "cvmfs", "lustre",
                "beegfs", "mountpoint-s3", "alluxio-fuse", "weed", "seaweedfs"}


class SpoolPlaceError(RuntimeError):
    """The spool directory cannot be used; the message says which rule it breaks."""


@dataclass(frozen=True, slots=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str


def unescape(field: str) -> str:
    """mountinfo escapes spaces and the like as octal (``\\040``)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 2:
            mounts.append(Mount(unescape(fields[4]), tail[0], tail[1]))
    return mounts


def mount_of(path: Path, mounts: list[Mount]) -> Mount:
    """The mount holding ``path``: the longest mount point that is a prefix of it."""
    target = str(path)
    best: Mount | None = None
    for mount in mounts:
        point = mount.mount_point.rstrip("/") or "/"
        if (target == point or target.startswith(point + "/") or point == "/") and (
                best is None or len(point) >= len(best.mount_point.rstrip("/") or "/")):
            best = mount
    if best is None:
        raise SpoolPlaceError(f"no mount found for {path}")
    return best


def network_filesystem(fs_type: str) -> str | None:
    """The name of the network filesystem ``fs_type`` is, or None when it is host-local."""
    if fs_type in NETWORK_FILESYSTEMS:
        return NETWORK_FILESYSTEMS[fs_type]
    kind, _, subtype = fs_type.partition(".")
    if kind in ("fuse", "fuseblk") and subtype in NETWORK_FUSE:
        return f"network FUSE ({subtype})"
    return None


def existing_ancestor(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path.resolve()


#: What to do about a spool root refused for its filesystem.
LOCAL_ROOT_HINT = "Set TUNEPLANE_TELEMETRY_SPOOL_ROOT to a local directory (no other is tried)"


def check_filesystem(directory: Path, mountinfo: str | None = None, *,
                     hint: str = LOCAL_ROOT_HINT) -> Mount:
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    mount = mount_of(existing_ancestor(directory), parse_mountinfo(text))
    name = network_filesystem(mount.fs_type)
    if name is not None:
        raise SpoolPlaceError(
            f"spool directory {directory} is on {name} ({mount.fs_type} {mount.source} at "
            f"{mount.mount_point}); the spool must be on a host-local disk. {hint}")
    return mount


def make_private(directory: Path, what: str = "spool directory") -> None:
    """Create ``directory`` (and missing parents) 0700, or check an existing one is private."""
    missing = []
    path = directory
    while not path.exists():
        missing.append(path)
        path = path.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made by a collector starting beside this one; checked below if ours
        os.chmod(path, 0o700)  # mkdir's mode is masked by the umask
    info = directory.stat()
    if not stat.S_ISDIR(info.st_mode):
        raise SpoolPlaceError(f"{what} {directory} is not a directory")
    if info.st_uid != os.geteuid():
        raise SpoolPlaceError(f"{what} {directory} is owned by uid {info.st_uid}, "
                              f"not by the collector's uid {os.geteuid()}")
    if info.st_mode & 0o077:
        raise SpoolPlaceError(f"{what} {directory} is mode "
                              f"{stat.S_IMODE(info.st_mode):04o}; it must be 0700 (private "
                              "to the collector user)")


def prepare(directory: Path, mountinfo: str | None = None) -> None:
    """Refuse a network filesystem first (nothing is created there), then make it private."""
    check_filesystem(directory, mountinfo)
    make_private(directory)


def member_dir(root: Path, owner: MemberKey) -> Path:
    """``<root>/<run>/<attempt>/<member>``, refused unless it stays inside ``root``."""
    for what, part in (("run", owner.run_id), ("member", owner.member)):
        if not is_name(part):
            raise SpoolPlaceError(f"{what} {part!r} cannot name a spool directory below "
                                  f"{root}: a name is {NAME_RULE}")
    if owner.attempt < 1:
        raise SpoolPlaceError(f"attempt {owner.attempt} cannot name a spool directory")
    directory = root / owner.run_id / str(owner.attempt) / owner.member
    path = root
    for part in directory.relative_to(root).parts:
        path = path / part
        if path.is_symlink():
            raise SpoolPlaceError(f"spool directory {directory}: {path} is a symbolic link to "
                                  f"{os.readlink(path)}; a spool stays inside {root}")
    if not directory.resolve().is_relative_to(root.resolve()):  # belt and braces
        raise SpoolPlaceError(f"spool directory {directory} resolves outside {root}")
    return directory


def grant(root: Path, owner: MemberKey, mountinfo: str | None = None) -> Path:
    """The member's private spool below a private, host-local root; made if missing."""
    check_filesystem(root, mountinfo)
    make_private(root, "spool root")
    directory = member_dir(root, owner)
    make_private(directory)
    return directory
