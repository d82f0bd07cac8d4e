//! The inputs a collector reads, decoded from bytes with no I/O: JSONL metric lines (and
//! the name rule and message wording they share).

pub mod jsonl;
pub mod names;
pub mod repr;
pub mod tensorboard;
