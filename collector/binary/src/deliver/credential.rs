//! The deliver-only credential as `deliver` sees it: what to ask for (`Asked`), whether the
//! one given is for this spool's tree (its claims read, not verified: ingest verifies it;
//! this only says early that it was made for another spool, or before the spool changed),
//! and whether ingest refused it.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{json, Value};

use super::tree::{hex, Hash};
use crate::collect::fence::failed;
use crate::spool::MemberKey;

/// What a spool holds to deliver, and the credential that covers it.
pub struct Asked<'a> {
    pub spool: &'a Path,
    pub owner: &'a MemberKey,
    pub epoch: &'a str,
    /// The tree's leaves: the batches the credential covers (some may be delivered since).
    pub batches: usize,
    /// Batches still in the spool, and their points.
    pub pending: usize,
    pub points: u64,
    pub root: Hash,
}

impl Asked<'_> {
    pub fn json(&self) -> String {
        json!({
            "spool": self.spool.display().to_string(),
            "run": self.owner.run_id,
            "attempt": self.owner.attempt,
            "member": self.owner.member,
            "epoch": self.epoch,
            "batches": self.batches,
            "root": hex(&self.root),
            "pending": {"batches": self.pending, "points": self.points},
        })
        .to_string()
    }

    pub fn text(&self) -> String {
        let spool = self.spool.display();
        format!(
            "{spool} holds {} batches ({} points) of {} not delivered (spool epoch {}).\n\
             An admin of the install issues the deliver-only credential for exactly these:\n  \
             tuneplane-admin delivery-token --run {} --attempt {} --member {} --epoch {} \
             --batches {} --root {} --out delivery.token\n\
             Then, from this host:\n  \
             tuneplane-collector deliver {spool} --target HOST:PORT --ca-file CA.pem \
             --token-file delivery.token",
            self.pending,
            self.points,
            self.owner,
            self.epoch,
            self.owner.run_id,
            self.owner.attempt,
            self.owner.member,
            self.epoch,
            self.batches,
            hex(&self.root),
        )
    }
}

fn claims(token: &str) -> Option<Value> {
    let body = token.trim().split('.').nth(1)?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&raw).ok()
}

/// When the token says it expires (unix seconds), read, not verified.
pub fn expires_at(token: &str) -> Option<i64> {
    claims(token)?["exp"].as_i64()
}

/// Whether the credential in `file` is a delivery token for this spool's tree.
pub fn matches(file: &PathBuf, epoch: &str, root: &Hash, batches: usize) -> Result<(), String> {
    let token = std::fs::read_to_string(file).map_err(|e| failed("token file", file, &e))?;
    let found =
        claims(&token).ok_or_else(|| format!("token file {} holds no token", file.display()))?;
    if found["kind"] != "delivery" {
        return Err(format!(
            "token file {} holds a {} token, not a deliver-only credential \
             (`tuneplane-admin delivery-token`)",
            file.display(),
            found["kind"].as_str().unwrap_or("malformed")
        ));
    }
    let wanted = (epoch, hex(root), batches as u64);
    let given = (
        found["epoch"].as_str().unwrap_or_default(),
        found["root"].as_str().unwrap_or_default().to_owned(),
        found["batches"].as_u64().unwrap_or_default(),
    );
    if given != wanted {
        return Err(format!(
            "the credential covers {} batches of spool epoch {} (root {}); this spool's are \
             {} batches of epoch {} (root {}): it was made for another spool, or before this \
             one changed. Run `tuneplane-collector deliver` without --token-file for the one \
             to ask for",
            given.2, given.0, given.1, wanted.2, wanted.0, wanted.1
        ));
    }
    Ok(())
}

/// Whether a sending failure is ingest refusing the credential (or a batch under it): trying
/// again cannot help.
pub fn refused(why: &str) -> bool {
    why.contains("UNAUTHENTICATED") || why.contains("PERMISSION_DENIED")
}
