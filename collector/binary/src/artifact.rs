//! The collector artifact: a content-addressed directory holding `manifest.json` and the
//! static `tuneplane-collector` of one target.
//!
//! The manifest (canonical JSON: keys sorted, no spaces) names the format, the target triple
//! and each file's sha256; the directory's name is the manifest's sha256. `verify` is what a
//! launch does first: it refuses a renamed, tampered, incomplete, padded or wrong-target
//! artifact with the reason. A Slurm node checks the same with its own coreutils
//! (`tuneplane.control.slurm.jobscript`), needing nothing from the artifact itself.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub const MANIFEST: &str = "manifest.json";
pub const FORMAT: u64 = 2;
pub const PROGRAM: &str = "tuneplane-collector";
/// The targets an artifact is built for: the `uname -m` of hosts that run each, and its
/// ELF `e_machine`.
pub const TARGETS: [(&str, &[&str], u16); 2] = [
    ("x86_64-unknown-linux-musl", &["x86_64", "amd64"], 62),
    ("aarch64-unknown-linux-musl", &["aarch64", "arm64"], 183),
];

fn sha256(path: &Path) -> Result<String, String> {
    let mut file =
        fs::File::open(path).map_err(|e| crate::collect::fence::failed("cannot read", path, &e))?;
    let mut digest = Sha256::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut block) {
            Ok(0) => break,
            Ok(n) => digest.update(&block[..n]),
            Err(e) => return Err(crate::collect::fence::failed("cannot read", path, &e)),
        }
    }
    Ok(hex(&digest.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The target this host runs, from its machine name (`uname -m`).
pub fn host_target() -> Result<&'static str, String> {
    let uname = nix::sys::utsname::uname().map_err(|e| format!("uname: {e}"))?;
    let machine = uname.machine().to_string_lossy().into_owned();
    TARGETS
        .iter()
        .find(|(_, machines, _)| machines.contains(&machine.as_str()))
        .map(|(target, _, _)| *target)
        .ok_or_else(|| format!("no collector target runs on a {machine} host"))
}

/// The target `binary` is a static executable of, from its ELF header; or why it is none.
fn target_of(binary: &Path) -> Result<&'static str, String> {
    let bytes =
        fs::read(binary).map_err(|e| crate::collect::fence::failed("cannot read", binary, &e))?;
    let said = |why: &str| format!("{} {why}", binary.display());
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return Err(said("is not a 64-bit little-endian ELF executable"));
    }
    let half = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    let (phoff, phentsize, phnum) = (
        word(32) as usize,
        usize::from(half(54)),
        usize::from(half(56)),
    );
    let interpreted = (0..phnum).any(|i| {
        let at = phoff + i * phentsize;
        at + 4 <= bytes.len()
            && u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()) == 3
    });
    if interpreted {
        return Err(said(
            "is dynamically linked (it names an interpreter); the artifact holds a static binary",
        ));
    }
    TARGETS
        .iter()
        .find(|(_, _, machine)| *machine == half(18))
        .map(|(target, _, _)| *target)
        .ok_or_else(|| {
            said(&format!(
                "is built for ELF machine {}, no collector target",
                half(18)
            ))
        })
}

/// Build the artifact of `binary` (the static collector for `target`) in `out`; returns
/// `out/<manifest sha256>`.
pub fn build(target: &str, binary: &Path, out: &Path) -> Result<PathBuf, String> {
    if !TARGETS.iter().any(|(t, _, _)| *t == target) {
        let known: Vec<&str> = TARGETS.iter().map(|(t, _, _)| *t).collect();
        return Err(format!(
            "--target {target:?} is none of {}",
            known.join(", ")
        ));
    }
    let built_for = target_of(binary)?;
    if built_for != target {
        return Err(format!(
            "{} is built for {built_for}, not {target}",
            binary.display()
        ));
    }
    let files = BTreeMap::from([(PROGRAM.to_owned(), sha256(binary)?)]);
    // Canonical: keys in sorted order (serde_json keeps them as written), no spaces.
    let manifest = json!({"entry_point": PROGRAM, "files": files, "format": FORMAT,
                          "name": PROGRAM, "target": target});
    let data = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
    let final_dir = out.join(hex(&Sha256::digest(&data)));
    if final_dir.exists() {
        verify(&final_dir, target)?;
        return Ok(final_dir);
    }
    let staging = out.join(format!(".building-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        fs::create_dir_all(&staging)?;
        fs::copy(binary, staging.join(PROGRAM))?;
        fs::write(staging.join(MANIFEST), &data)?;
        fs::rename(&staging, &final_dir)
    };
    write().map_err(|e| {
        let _ = fs::remove_dir_all(&staging);
        crate::collect::fence::failed("cannot write the artifact in", out, &e)
    })?;
    verify(&final_dir, target)?;
    Ok(final_dir)
}

/// Check the artifact in `directory` before running it on a host of `host`; its manifest.
/// Check the collector image this process runs from: its `manifest` is the artifact of
/// `digest` (its sha256), built for `host`, and `running` (this executable) is the binary the
/// manifest lists. A sidecar does this before anything else, so an image tagged with one
/// artifact's digest but holding another's files is refused with the reason.
pub fn verify_running(
    manifest: &Path,
    running: &Path,
    digest: &str,
    host: &str,
) -> Result<(), String> {
    let data = fs::read(manifest).map_err(|e| {
        format!(
            "collector image: no readable {}: {}",
            manifest.display(),
            crate::collect::fence::plain(&e)
        )
    })?;
    let found = hex(&Sha256::digest(&data));
    if found != digest {
        return Err(format!(
            "collector image: its manifest's sha256 is {found}, not the artifact {digest} \
             control names (a wrong or tampered image)"
        ));
    }
    let manifest: Value = serde_json::from_slice(&data)
        .map_err(|e| format!("collector image: {MANIFEST} is not JSON: {e}"))?;
    let built = manifest["target"].as_str().unwrap_or("?");
    if built != host {
        return Err(format!(
            "collector image is built for {built}; this node runs {host}"
        ));
    }
    let listed = manifest["files"][PROGRAM].as_str().unwrap_or_default();
    if sha256(running)? != listed {
        return Err(format!(
            "collector image: the running {PROGRAM} does not match its manifest's sha256 \
             (tampered)"
        ));
    }
    Ok(())
}

pub fn verify(directory: &Path, host: &str) -> Result<Value, String> {
    let at = directory.display();
    let data = fs::read(directory.join(MANIFEST)).map_err(|e| {
        format!(
            "artifact {at}: no readable {MANIFEST}: {}",
            crate::collect::fence::plain(&e)
        )
    })?;
    let digest = hex(&Sha256::digest(&data));
    if directory.file_name().and_then(|n| n.to_str()) != Some(digest.as_str()) {
        return Err(format!(
            "artifact {at}: its manifest's sha256 is {digest}; the directory name \
                            must be that digest (renamed or edited manifest)"
        ));
    }
    let manifest: Value = serde_json::from_slice(&data)
        .map_err(|e| format!("artifact {at}: {MANIFEST} is not JSON: {e}"))?;
    if manifest["format"] != FORMAT {
        return Err(format!(
            "artifact {at}: manifest format {} is not {FORMAT}",
            manifest["format"]
        ));
    }
    let built = manifest["target"].as_str().unwrap_or("?");
    if built != host {
        return Err(format!(
            "artifact {at} is built for {built}; this host runs {host}"
        ));
    }
    let listed = manifest["files"].as_object().cloned().unwrap_or_default();
    let entries = fs::read_dir(directory)
        .map_err(|e| format!("artifact {at}: {}", crate::collect::fence::plain(&e)))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != MANIFEST && !listed.contains_key(&name) {
            return Err(format!(
                "artifact {at}: {name} is not in the manifest (added)"
            ));
        }
        // What is checked is what runs: a link could name another file by then.
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            return Err(format!("artifact {at}: {name} is a symbolic link"));
        }
    }
    for (name, expected) in &listed {
        let path = directory.join(name);
        if !path.is_file() {
            return Err(format!("artifact {at}: {name} is missing"));
        }
        if Some(sha256(&path)?.as_str()) != expected.as_str() {
            return Err(format!(
                "artifact {at}: {name} does not match its sha256 (tampered)"
            ));
        }
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_image_is_its_artifacts_manifest_and_binary_or_refused_saying_which() {
        let base = std::env::temp_dir().join(format!("image-{}", std::process::id()));
        fs::create_dir_all(&base).unwrap();
        let (binary, manifest) = (base.join(PROGRAM), base.join(MANIFEST));
        fs::write(&binary, b"\x7fELF the collector").unwrap();
        let target = TARGETS[0].0;
        let text = json!({"files": {PROGRAM: sha256(&binary).unwrap()}, "format": FORMAT,
                          "target": target})
        .to_string();
        fs::write(&manifest, &text).unwrap();
        let digest = hex(&Sha256::digest(text.as_bytes()));
        verify_running(&manifest, &binary, &digest, target).unwrap();
        let other = "0".repeat(64);
        let why = verify_running(&manifest, &binary, &other, target).unwrap_err();
        assert!(why.contains("wrong or tampered image"), "{why}");
        let why = verify_running(&manifest, &binary, &digest, TARGETS[1].0).unwrap_err();
        assert!(why.contains("built for x86_64"), "{why}");
        fs::write(&binary, b"\x7fELF another collector").unwrap();
        let why = verify_running(&manifest, &binary, &digest, target).unwrap_err();
        assert!(why.contains("(tampered)"), "{why}");
        fs::remove_dir_all(&base).unwrap();
    }
}
