//! The Merkle tree a deliver-only credential commits to (RFC 9162 §2.1, as ingest checks it:
//! `contract/src/tuneplane/telemetry/v1/delivery.py`): one leaf per sealed batch,
//! `SHA-256(0x00 || sequence as 8 bytes big-endian || SHA-256(payload))`, in sequence order;
//! a node is `SHA-256(0x01 || left || right)`; a tree of n leaves splits at the largest power
//! of two below n. Each batch is sent with its audit path, so ingest admits exactly these
//! bytes under exactly these identities.

use sha2::{Digest, Sha256};

pub type Hash = [u8; 32];

pub fn leaf(sequence: u64, payload: &[u8]) -> Hash {
    let body = Sha256::digest(payload);
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(sequence.to_be_bytes());
    hasher.update(body);
    hasher.finalize().into()
}

fn node(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([1u8]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The largest power of two below `n` (n ≥ 2).
fn split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// The root of the tree of `leaves` (at least one) and each leaf's audit path, from the
/// leaf up: every path in one walk of the tree.
pub fn paths(leaves: &[Hash]) -> (Hash, Vec<Vec<Hash>>) {
    if leaves.len() <= 1 {
        return (
            leaves.first().copied().unwrap_or_default(),
            vec![Vec::new(); leaves.len()],
        );
    }
    let at = split(leaves.len());
    let (left, mut left_paths) = paths(&leaves[..at]);
    let (right, right_paths) = paths(&leaves[at..]);
    for path in &mut left_paths {
        path.push(right);
    }
    left_paths.extend(right_paths.into_iter().map(|mut path| {
        path.push(left);
        path
    }));
    (node(&left, &right), left_paths)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A proof as the `tuneplane-delivery-proof` header carries it: `INDEX:HEX`.
pub fn render(index: usize, path: &[Hash]) -> String {
    format!("{index}:{}", hex(&path.concat()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors `tests/contract/test_delivery.py` checks the Python side against.
    const SEQUENCES: [u64; 5] = [1, 2, 3, 5, 8];
    const ROOT: &str = "ba21db23b74a740ff2ff4ad84cc1a1bef4a0b6d9a0739353b5e65d54ed3a31da";
    const PROOF_3: &str = "3:a6ec687245e2d0980e25276e42dd688c005aea4a2d659d6115afa0770721a218\
b4a2e7e0086fb2741555761a120eb41164fe0004af0da13ceaf6cf97125d0c8a\
2323cb65a1855078befe47b0a5243099af14652a381372464a8b529688b30712";

    fn vector_leaves() -> Vec<Hash> {
        SEQUENCES
            .iter()
            .map(|s| leaf(*s, format!("batch-{s}").as_bytes()))
            .collect()
    }

    #[test]
    fn the_root_and_a_path_are_the_shared_vectors() {
        let (root, paths) = paths(&vector_leaves());
        assert_eq!(hex(&root), ROOT);
        assert_eq!(render(3, &paths[3]), PROOF_3);
        assert_eq!(
            hex(&leaf(1, b"")),
            "a9ae94506412b3ba61533db025c85cdf6ab4f4c63f948be10d7183ed22a6ea3f"
        );
    }

    #[test]
    fn one_leaf_is_its_own_root_with_an_empty_path() {
        let only = leaf(7, b"x");
        assert_eq!(paths(&[only]), (only, vec![Vec::new()]));
    }

    #[test]
    fn every_path_is_as_long_as_the_tree_is_deep() {
        for n in 2..40usize {
            let leaves: Vec<Hash> = (0..n as u64).map(|s| leaf(s, b"p")).collect();
            let (_, found) = paths(&leaves);
            assert_eq!(found.len(), n);
            let deepest = found.iter().map(Vec::len).max().unwrap_or(0);
            assert_eq!(
                deepest,
                (usize::BITS - (n - 1).leading_zeros()) as usize,
                "{n}"
            );
        }
    }
}
