//! The telemetry contract as the collector keeps it: the batch messages and the ingest
//! client compiled from `contract/tuneplane/telemetry/v1/telemetry.proto`, and the bounds of
//! one batch (`tuneplane.telemetry.v1.limits`, which ingest and the projector check), and
//! which of ingest's answers a batch is sent again after (`tuneplane.contract.errors`).

use tonic::Code;

/// The project's declaration of the telemetry contract, compiled at build time.
#[allow(clippy::all, clippy::pedantic)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/tuneplane.telemetry.v1.rs"));
}

/// The node contract's `SlurmJobControl` client and messages (a Slurm job's collector).
#[allow(clippy::all, clippy::pedantic)]
pub mod node {
    include!(concat!(env!("OUT_DIR"), "/tuneplane.node.v1.rs"));
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
/// A source position's reader state, at most: a batch whose state is longer carries no
/// position (and moves no checkpoint).
pub const MAX_POSITION_STATE_BYTES: usize = 256 * 1024;
/// A source position's file (relative to its source root), at most; longer, or not a plain
/// relative path of names, and the batch carries no position.
pub const MAX_POSITION_FILE_BYTES: usize = 1024;
/// A run path's bound in UTF-8 bytes.
pub const MAX_RUN_PATH_BYTES: usize = 512;

/// gRPC's name of a status code, as logs and the contract name them.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Answers after which the same call may succeed later (`RETRYABLE_CODES`), or a call
/// broken midway (`BROKEN_CALL_CODES`): a client that reconnects retries both.
pub fn retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::ResourceExhausted
            | Code::Aborted
            | Code::Internal
            | Code::Unknown
    )
}

/// Answers after which the same batch may succeed later: retryable ones, and the token
/// ones (they pass once the platform rewrites the token file).
pub fn transient(code: Code) -> bool {
    retryable(code)
        || matches!(
            code,
            Code::Unauthenticated | Code::PermissionDenied | Code::Cancelled
        )
}
