//! What enrollment leaves in the agent's state directory (`node.json`, 0600), and how the
//! agent writes its private files: whole or not at all.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub const STATE_FILE: &str = "node.json";

/// Replaces `path` atomically with a 0600 file: readers see the old or the new, never half.
pub fn write_private(path: &Path, data: &[u8]) -> Result<(), String> {
    let said = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut random = [0u8; 6];
    getrandom::fill(&mut random).map_err(|e| format!("no random name: {e}"))?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = path.with_file_name(format!(".{}.{suffix}", name.unwrap_or_default()));
    let written = (|| {
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        out.write_all(data)?;
        out.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.map_err(said)
}

/// The node's credential and how to reach control.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeState {
    pub control: String,
    pub ca_file: String,
    pub node_id: String,
    pub token: String,
    #[serde(default)]
    pub server_name: String,
}

impl NodeState {
    pub fn load(state_dir: &Path) -> Result<Self, String> {
        let path = state_dir.join(STATE_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "{} not found; enroll first (`tuneplane-collector node enroll`)",
                    path.display()
                ))
            }
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a node state file: {e}", path.display()))
    }

    pub fn save(&self, state_dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        write_private(&state_dir.join(STATE_FILE), text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_file_is_replaced_whole_and_stays_0600() {
        let dir = std::env::temp_dir().join(format!("tp-state-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        write_private(&path, b"one").unwrap();
        write_private(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1); // no temporary file left
        let state = NodeState {
            control: "c:8443".into(),
            ca_file: "/ca.pem".into(),
            node_id: "n".into(),
            token: "t".into(),
            server_name: String::new(),
        };
        state.save(&dir).unwrap();
        assert_eq!(NodeState::load(&dir).unwrap().node_id, "n");
        fs::write(dir.join(STATE_FILE), "{}").unwrap();
        assert!(NodeState::load(&dir)
            .unwrap_err()
            .contains("not a node state file"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
