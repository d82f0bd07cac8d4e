//! The mount table, read to judge a spool's filesystem: network and cluster filesystems
//! (NFS, SMB/CIFS, Lustre, GPFS, network FUSE, ...) are refused by name, since their locking
//! and fsync semantics do not keep SQLite's promises and a spool shared between hosts would
//! mix members.

use std::fs;
use std::path::{Path, PathBuf};

use super::SpoolError;

/// Filesystem types a spool may not live on (as the mount table names them).
const NETWORK_FILESYSTEMS: &[(&str, &str)] = &[
    ("nfs", "NFS"),
    ("nfs4", "NFS"),
    ("cifs", "SMB/CIFS"),
    ("smb3", "SMB/CIFS"),
    ("smbfs", "SMB/CIFS"),
    ("lustre", "Lustre"),
    ("gpfs", "GPFS"),
    ("beegfs", "BeeGFS"),
    ("ceph", "CephFS"),
    ("9p", "9p"),
    ("afs", "AFS"),
    ("glusterfs", "GlusterFS"),
    ("gfs2", "GFS2"),
    ("ocfs2", "OCFS2"),
    ("orangefs", "OrangeFS"),
    ("pvfs2", "OrangeFS"),
    ("davfs", "WebDAV"),
];
/// FUSE subtypes that reach over the network.
const NETWORK_FUSE: &[&str] = &[
    "sshfs",
    "s3fs",
    "gcsfuse",
    "ceph-fuse",
    "ceph",
    "glusterfs",
    "rclone",
    "juicefs",
    "goofys",
    "blobfuse",
    "blobfuse2",
    "davfs",
    "cvmfs",
    "lustre",
    "beegfs",
    "mountpoint-s3",
    "alluxio-fuse",
    "weed",
    "seaweedfs",
];

const LOCAL_ROOT_HINT: &str =
    "Set TUNEPLANE_TELEMETRY_SPOOL_ROOT to a local directory (no other is tried)";

#[derive(Debug, PartialEq)]
pub struct Mount {
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
}

/// The mount table escapes spaces and the like as octal (`\040`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let (mut out, mut at) = (Vec::with_capacity(bytes.len()), 0);
    while at < bytes.len() {
        let octal = bytes
            .get(at + 1..at + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[at], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                at += 4;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split_whitespace().collect();
            let tail: Vec<&str> = right.split_whitespace().collect();
            (fields.len() >= 5 && tail.len() >= 2).then(|| Mount {
                mount_point: unescape(fields[4]),
                fs_type: tail[0].to_owned(),
                source: tail[1].to_owned(),
            })
        })
        .collect()
}

fn point_of(mount: &Mount) -> &str {
    let point = mount.mount_point.trim_end_matches('/');
    if point.is_empty() {
        "/"
    } else {
        point
    }
}

/// The mount holding `path`: the longest mount point that is a prefix of it (of equals,
/// the last listed: a later mount covers an earlier one).
fn mount_of<'a>(path: &Path, mounts: &'a [Mount]) -> Option<&'a Mount> {
    let target = path.to_string_lossy();
    let covers =
        |point: &str| point == "/" || target == point || target.starts_with(&format!("{point}/"));
    let mut best: Option<&Mount> = None;
    for mount in mounts {
        let point = point_of(mount);
        if covers(point) && best.is_none_or(|b| point.len() >= point_of(b).len()) {
            best = Some(mount);
        }
    }
    best
}

/// The name of the network filesystem `fs_type` is, or `None` when it is host-local.
pub fn network_filesystem(fs_type: &str) -> Option<String> {
    if let Some((_, name)) = NETWORK_FILESYSTEMS.iter().find(|(t, _)| *t == fs_type) {
        return Some((*name).to_owned());
    }
    let (kind, subtype) = fs_type.split_once('.').unwrap_or((fs_type, ""));
    ((kind == "fuse" || kind == "fuseblk") && NETWORK_FUSE.contains(&subtype))
        .then(|| format!("network FUSE ({subtype})"))
}

fn existing_ancestor(path: &Path) -> PathBuf {
    // A relative path is judged where it is: below the working directory, not at `/`.
    let mut path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    while !path.exists() && path.pop() {}
    fs::canonicalize(&path).unwrap_or(path)
}

/// The network filesystem `path` is on, judged from the mount table `mountinfo`; `None` when
/// it is host-local (or no mount holds it).
pub fn network_filesystem_of(path: &Path, mountinfo: &str) -> Option<String> {
    let mounts = parse_mountinfo(mountinfo);
    mount_of(&existing_ancestor(path), &mounts).and_then(|m| network_filesystem(&m.fs_type))
}

/// Refuses a `directory` on a network filesystem, judged from the mount table `mountinfo`.
pub fn check_filesystem(directory: &Path, mountinfo: &str) -> Result<(), SpoolError> {
    check_filesystem_saying(directory, mountinfo, LOCAL_ROOT_HINT)
}

/// `check_filesystem`, its refusal ending with `hint` (what to launch with instead).
pub fn check_filesystem_saying(
    directory: &Path,
    mountinfo: &str,
    hint: &str,
) -> Result<(), SpoolError> {
    let mounts = parse_mountinfo(mountinfo);
    let mount = mount_of(&existing_ancestor(directory), &mounts)
        .ok_or_else(|| SpoolError(format!("no mount found for {}", directory.display())))?;
    match network_filesystem(&mount.fs_type) {
        None => Ok(()),
        Some(name) => Err(SpoolError(format!(
            "spool directory {} is on {name} ({} {} at {}); the spool must be on a \
             host-local disk. {hint}",
            directory.display(),
            mount.fs_type,
            mount.source,
            mount.mount_point
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_filesystem_is_named() {
        let table = "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n\
                     30 22 0:40 / /tmp rw - nfs4 server:/export rw\n\
                     31 22 0:41 / /mnt/with\\040space rw - fuse.sshfs me@host: rw\n";
        let refused = check_filesystem(Path::new("/tmp/spool"), table).unwrap_err();
        assert!(
            refused
                .0
                .contains("is on NFS (nfs4 server:/export at /tmp)"),
            "{}",
            refused.0
        );
        let mounts = parse_mountinfo(table);
        let spaced = mount_of(Path::new("/mnt/with space/x"), &mounts).map(|m| m.fs_type.as_str());
        assert_eq!(spaced, Some("fuse.sshfs"));
        assert_eq!(
            network_filesystem("fuse.sshfs").as_deref(),
            Some("network FUSE (sshfs)")
        );
        assert_eq!(
            mount_of(Path::new("/tmpother"), &mounts).map(|m| m.fs_type.as_str()),
            Some("ext4")
        );
    }

    #[test]
    fn network_and_cluster_filesystems_are_named_and_host_local_ones_pass() {
        for (fs_type, name) in [
            ("nfs", "NFS"),
            ("nfs4", "NFS"),
            ("cifs", "SMB/CIFS"),
            ("smb3", "SMB/CIFS"),
            ("lustre", "Lustre"),
            ("gpfs", "GPFS"),
            ("beegfs", "BeeGFS"),
            ("ceph", "CephFS"),
            ("9p", "9p"),
            ("fuse.sshfs", "network FUSE (sshfs)"),
            ("fuse.s3fs", "network FUSE (s3fs)"),
            ("fuse.gcsfuse", "network FUSE (gcsfuse)"),
            ("fuse.ceph-fuse", "network FUSE (ceph-fuse)"),
        ] {
            assert_eq!(
                network_filesystem(fs_type).as_deref(),
                Some(name),
                "{fs_type}"
            );
        }
        for fs_type in [
            "ext4",
            "xfs",
            "btrfs",
            "tmpfs",
            "zfs",
            "overlay",
            "fuse.lxcfs",
        ] {
            assert_eq!(network_filesystem(fs_type), None, "{fs_type}");
        }
    }

    #[test]
    fn a_local_mount_inside_a_network_one_holds_what_is_below_it() {
        let base = std::env::temp_dir().join(format!("tp-mounts-{}", std::process::id()));
        fs::create_dir_all(base.join("a/local")).unwrap();
        let base = fs::canonicalize(&base).unwrap();
        let table = format!(
            "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
             90 22 0:50 / {0}/a rw - lustre mds@tcp:/fs rw\n\
             91 90 0:51 / {0}/a/local rw - ext4 /dev/vdb rw\n",
            base.display()
        );
        assert!(check_filesystem(&base.join("a/local/spool"), &table).is_ok());
        for refused in ["a/other", "a", "a/localother"] {
            let why = check_filesystem(&base.join(refused), &table).unwrap_err();
            assert!(why.0.contains("is on Lustre"), "{refused}: {}", why.0);
        }
        fs::remove_dir_all(&base).unwrap();
    }
}
