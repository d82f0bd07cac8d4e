//! What a spool holds to deliver: the list of its batches a credential covers (kept in the
//! spool, `spool::manifest`, so a delivery cut short goes on under the same credential), and
//! the tree of that list, which a credential is asked for.

use std::path::Path;

use super::tree;
use crate::spool::manifest::Entry;
use crate::spool::{lock, Spool};

/// The tree the spool's credential is (or would be) for: the list kept by an earlier
/// delivery when every pending batch is in it, else the pending batches, kept now.
pub fn manifest(spool: &mut Spool) -> Result<(Vec<Entry>, u64, usize), String> {
    let pending = spool.pending_entries().map_err(|e| e.to_string())?;
    let points = pending.iter().map(|(_, p)| p).sum();
    let kept = spool.kept_manifest().map_err(|e| e.to_string())?;
    let covered = |list: &[Entry]| pending.iter().all(|(e, _)| list.contains(e));
    let list = match kept {
        Some(list) if covered(&list) => list,
        _ => {
            let list: Vec<Entry> = pending.iter().map(|(e, _)| *e).collect();
            if !list.is_empty() {
                spool.keep_manifest(&list).map_err(|e| e.to_string())?;
            }
            list
        }
    };
    Ok((list, points, pending.len()))
}

/// The tree a deliver-only credential for a spool covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    pub epoch: String,
    /// Its root, 64 hex digits.
    pub root: String,
    /// Its leaves: the batches it covers.
    pub batches: usize,
}

/// The tree of what the spool at `dir` holds to deliver (None: nothing), its list kept as
/// `deliver` keeps it, so a credential for it covers what `deliver` sends. The spool is
/// held (locked) meanwhile: no collector may be writing it.
pub fn tree_of(dir: &Path, mountinfo: &str) -> Result<Option<Tree>, String> {
    let owner = crate::spool::status::owner(dir).map_err(|e| e.0)?;
    let _held = lock::hold(dir, mountinfo).map_err(|e| e.0)?;
    let mut spool = Spool::open(dir, &owner, mountinfo).map_err(|e| e.0)?;
    let (list, _, pending) = manifest(&mut spool)?;
    if pending == 0 {
        return Ok(None);
    }
    let leaves: Vec<tree::Hash> = list.iter().map(|e| e.leaf).collect();
    Ok(Some(Tree {
        epoch: spool.epoch.clone(),
        root: tree::hex(&tree::paths(&leaves).0),
        batches: list.len(),
    }))
}
