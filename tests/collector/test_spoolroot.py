"""Where a spool may live: private, host-local, no fallback; a damaged spool is kept."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tuneplane.collector.spool import Spool, SpoolError, status
from tuneplane.collector.spoolroot import (
    SpoolPlaceError,
    check_filesystem,
    grant,
    member_dir,
    network_filesystem,
)
from tuneplane.telemetry.v1.identity import MemberKey

OWNER = MemberKey("run", 1, "rank-0")


def mountinfo(mount_point: str, fs_type: str, source: str) -> str:
    return ("22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n"
            f"90 22 0:50 / {mount_point} rw,relatime shared:1 - {fs_type} {source} rw\n")


@pytest.mark.parametrize(("fs_type", "name"), [
    ("nfs", "NFS"), ("nfs4", "NFS"), ("cifs", "SMB/CIFS"), ("smb3", "SMB/CIFS"),
    ("lustre", "Lustre"), ("gpfs", "GPFS"), ("beegfs", "BeeGFS"), ("ceph", "CephFS"),
    ("9p", "9p"), ("fuse.sshfs", "network FUSE (sshfs)"), ("fuse.s3fs", "network FUSE (s3fs)"),
    ("fuse.gcsfuse", "network FUSE (gcsfuse)"), ("fuse.ceph-fuse", "network FUSE (ceph-fuse)"),
])
def test_network_filesystems_are_named(fs_type: str, name: str) -> None:
    assert network_filesystem(fs_type) == name


@pytest.mark.parametrize("fs_type", ["ext4", "xfs", "btrfs", "tmpfs", "zfs", "overlay",
                                     "fuse.lxcfs"])
def test_host_local_filesystems_pass(fs_type: str) -> None:
    assert network_filesystem(fs_type) is None


def test_a_spool_on_nfs_is_refused_naming_the_filesystem_and_nothing_is_created(
        tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()  # the mount point
    spool_dir = tmp_path / "shared" / "spool"
    info = mountinfo(str(tmp_path / "shared"), "nfs4", "filer:/export")
    with pytest.raises(SpoolError, match=r"is on NFS \(nfs4 filer:/export at .*shared\).*"
                                         r"no other is tried"):
        Spool(spool_dir, OWNER, mountinfo=info)
    assert not spool_dir.exists()


def test_the_mount_holding_a_path_is_the_longest_prefix(tmp_path: Path) -> None:
    (tmp_path / "a" / "local").mkdir(parents=True)
    info = mountinfo(str(tmp_path / "a"), "lustre", "mds@tcp:/fs") + \
        f"91 22 0:51 / {tmp_path}/a/local rw - ext4 /dev/vdb rw\n"
    check_filesystem(tmp_path / "a" / "local" / "spool", info)
    with pytest.raises(SpoolPlaceError, match="Lustre"):
        check_filesystem(tmp_path / "a" / "other", info)
    with pytest.raises(SpoolPlaceError, match="Lustre"):
        check_filesystem(tmp_path / "a", info)


def test_mount_points_with_spaces_are_unescaped(tmp_path: Path) -> None:
    spaced = tmp_path / "with space"
    spaced.mkdir()
    info = mountinfo(str(spaced).replace(" ", "\\040"), "cifs", "//nas/share")
    with pytest.raises(SpoolPlaceError, match="SMB/CIFS"):
        check_filesystem(spaced / "spool", info)


def test_the_real_mount_table_accepts_this_hosts_disk(tmp_path: Path) -> None:
    mount = check_filesystem(tmp_path)
    assert network_filesystem(mount.fs_type) is None


def test_new_directories_are_made_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        Spool(tmp_path / "root" / "run" / "1" / "rank-0", OWNER).close()
    finally:
        os.umask(old)
    for path in ("root", "root/run", "root/run/1", "root/run/1/rank-0"):
        assert (tmp_path / path).stat().st_mode & 0o777 == 0o700, path


def test_an_existing_directory_open_to_others_is_refused(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir(mode=0o755)
    spool_dir.chmod(0o755)
    with pytest.raises(SpoolError, match="is mode 0755; it must be 0700"):
        Spool(spool_dir, OWNER)


def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir(mode=0o700)
    os.chown(spool_dir, 12345, 12345)
    with pytest.raises(SpoolError, match="owned by uid 12345"):
        Spool(spool_dir, OWNER)


def everything(root: Path) -> set[Path]:
    return {Path(d) / n for d, dirs, files in os.walk(root) for n in [*dirs, *files]}


@pytest.mark.parametrize(("owner", "words"), [
    (MemberKey("run", 1, "../../x"), "member '../../x' cannot name a spool directory"),
    (MemberKey("run", 1, ".."), "member '..' cannot name"),
    (MemberKey("../../etc", 1, "rank-0"), "run '../../etc' cannot name"),
    (MemberKey("/tmp/abs", 1, "rank-0"), "run '/tmp/abs' cannot name"),
    (MemberKey("run", 1, "rank-0\n"), "member 'rank-0\\n' cannot name"),
    (MemberKey("run", 0, "rank-0"), "attempt 0 cannot name"),
])
def test_a_member_spool_outside_the_root_is_refused_and_nothing_is_made(
        tmp_path: Path, owner: MemberKey, words: str) -> None:
    root = tmp_path / "box" / "spool"
    root.mkdir(parents=True, mode=0o700)
    with pytest.raises(SpoolPlaceError, match=re.escape(words)):
        grant(root, owner)
    assert everything(tmp_path) == {tmp_path / "box", root}


def test_a_symbolic_link_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "spool", tmp_path / "elsewhere"
    root.mkdir(mode=0o700)
    outside.mkdir(mode=0o700)
    (root / "run").symlink_to(outside)
    with pytest.raises(SpoolPlaceError, match=r"spool/run is a symbolic link to .*elsewhere; "
                                              r"a spool stays inside"):
        grant(root, OWNER)
    assert list(outside.iterdir()) == []


def test_a_member_spool_is_made_private_inside_its_root(tmp_path: Path) -> None:
    root = tmp_path / "spool"
    directory = grant(root, OWNER)
    assert directory == member_dir(root, OWNER) == root / "run" / "1" / "rank-0"
    assert everything(tmp_path) == {root, root / "run", root / "run" / "1", directory}
    for path in (root, root / "run", root / "run" / "1", directory):
        assert path.stat().st_mode & 0o777 == 0o700, path


def test_a_damaged_spool_database_is_reported_and_kept(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    Spool(spool_dir, OWNER).close()
    database = spool_dir / Spool.FILE
    for sidecar in spool_dir.glob(f"{Spool.FILE}-*"):
        sidecar.unlink()
    garbage = b"this is not an SQLite database" * 100
    database.write_bytes(garbage)
    with pytest.raises(SpoolError, match=r"is damaged .* It is kept as it is"):
        Spool(spool_dir, OWNER)
    assert database.read_bytes() == garbage
    with pytest.raises(SpoolError, match="damaged"):
        status(spool_dir)  # `spool status` says the same
