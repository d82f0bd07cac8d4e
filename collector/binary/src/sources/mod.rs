//! The inputs a collector reads, decoded from bytes with no I/O: JSONL metric lines,
//! TensorBoard event files, the config (hyperparameters) both declare (and the name rule
//! and message wording they share).

pub mod config;
pub mod jsonl;
pub mod names;
pub mod repr;
pub mod tensorboard;
