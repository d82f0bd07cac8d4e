//! The spool's place: private to the collector user, durable and on a host-local
//! filesystem.
//!
//! Network and cluster filesystems are refused with an error naming the filesystem: their
//! locking and fsync semantics do not keep SQLite's promises, and a spool shared between
//! hosts would mix members. There is never a fallback to another directory. A member's
//! spool below a root is `<root>/<run>/<attempt>/<member>`, each part a name, checked to
//! stay inside the root before anything is created.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{MemberKey, SpoolError};
use crate::sources::names::{is_identifier, NAME_RULE};
use crate::sources::repr::py_str;

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
    let mut path = path.to_path_buf();
    while !path.exists() && path.pop() {}
    fs::canonicalize(&path).unwrap_or(path)
}

/// Refuses a `directory` on a network filesystem, judged from the mount table `mountinfo`.
pub fn check_filesystem(directory: &Path, mountinfo: &str) -> Result<(), SpoolError> {
    let mounts = parse_mountinfo(mountinfo);
    let mount = mount_of(&existing_ancestor(directory), &mounts)
        .ok_or_else(|| SpoolError(format!("no mount found for {}", directory.display())))?;
    match network_filesystem(&mount.fs_type) {
        None => Ok(()),
        Some(name) => Err(SpoolError(format!(
            "spool directory {} is on {name} ({} {} at {}); the spool must be on a \
             host-local disk. {LOCAL_ROOT_HINT}",
            directory.display(),
            mount.fs_type,
            mount.source,
            mount.mount_point
        ))),
    }
}

/// Creates `directory` (and missing parents) 0700, or checks an existing one is private.
pub fn make_private(directory: &Path, what: &str) -> Result<(), SpoolError> {
    let said = |e: std::io::Error| SpoolError(format!("{what} {}: {e}", directory.display()));
    let mut missing = Vec::new();
    let mut path = directory.to_path_buf();
    while !path.exists() {
        missing.push(path.clone());
        if !path.pop() {
            break;
        }
    }
    for path in missing.iter().rev() {
        match DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(said)?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(said(e)),
        }
    }
    let info = fs::metadata(directory).map_err(said)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !info.is_dir() {
        return Err(SpoolError(format!(
            "{what} {} is not a directory",
            directory.display()
        )));
    }
    if info.uid() != euid {
        return Err(SpoolError(format!(
            "{what} {} is owned by uid {}, not by the collector's uid {euid}",
            directory.display(),
            info.uid()
        )));
    }
    if info.mode() & 0o077 != 0 {
        return Err(SpoolError(format!(
            "{what} {} is mode {:04o}; it must be 0700 (private to the collector user)",
            directory.display(),
            info.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Refuses a network filesystem first (nothing is created there), then makes it private.
pub fn prepare(directory: &Path, mountinfo: &str) -> Result<(), SpoolError> {
    check_filesystem(directory, mountinfo)?;
    make_private(directory, "spool directory")
}

/// `<root>/<run>/<attempt>/<member>`, refused unless it stays inside `root`.
pub fn member_dir(root: &Path, owner: &MemberKey) -> Result<PathBuf, SpoolError> {
    for (what, part) in [("run", &owner.run_id), ("member", &owner.member)] {
        if !is_identifier(part) {
            return Err(SpoolError(format!(
                "{what} {} cannot name a spool directory below {}: a name is {NAME_RULE}",
                py_str(part),
                root.display()
            )));
        }
    }
    if owner.attempt < 1 {
        return Err(SpoolError(format!(
            "attempt {} cannot name a spool directory",
            owner.attempt
        )));
    }
    let mut path = root.to_path_buf();
    for part in [
        owner.run_id.clone(),
        owner.attempt.to_string(),
        owner.member.clone(),
    ] {
        path.push(part);
        if path.is_symlink() {
            let to = fs::read_link(&path).unwrap_or_default();
            return Err(SpoolError(format!(
                "spool directory {}: {} is a symbolic link to {}; a spool stays inside {}",
                root.join(&owner.run_id)
                    .join(owner.attempt.to_string())
                    .join(&owner.member)
                    .display(),
                path.display(),
                to.display(),
                root.display()
            )));
        }
    }
    Ok(path)
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
    fn member_parts_must_be_names() {
        let owner = |run: &str, member: &str| MemberKey {
            run_id: run.to_owned(),
            attempt: 1,
            member: member.to_owned(),
        };
        let root = Path::new("/nonexistent-root");
        assert_eq!(
            member_dir(root, &owner("r", "m")).unwrap(),
            PathBuf::from("/nonexistent-root/r/1/m")
        );
        assert!(member_dir(root, &owner("..", "m")).is_err());
        assert!(member_dir(root, &owner("r", "a/b")).is_err());
    }
}
