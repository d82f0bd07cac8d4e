//! The telemetry contract as the collector keeps it: the batch messages and the ingest
//! client compiled from `protos/tuneplane/telemetry/v1/telemetry.proto`, and the bounds of
//! one batch (`tuneplane.telemetry.v1.limits`, which ingest and the projector check).

/// The project's declaration of the telemetry contract, compiled at build time.
#[allow(clippy::all, clippy::pedantic)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/tuneplane.telemetry.v1.rs"));
}

/// Points of one batch, at most.
pub const MAX_BATCH_POINTS: usize = 50_000;
/// Encoded bytes of one batch, at most.
pub const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;
/// Rich records of one batch, at most.
pub const MAX_BATCH_RICH: usize = 5_000;
/// Purge markers of one batch, at most.
pub const MAX_BATCH_SESSION_STARTS: usize = 5_000;
/// Series (chunks) of one batch, at most: a marker's tags too.
pub const MAX_BATCH_SERIES: usize = 2_000;
/// A run path's bound in UTF-8 bytes.
pub const MAX_RUN_PATH_BYTES: usize = 512;
