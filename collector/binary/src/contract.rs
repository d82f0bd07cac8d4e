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
/// Config entries (hyperparameters) of one batch, at most.
pub const MAX_BATCH_CONFIG: usize = 1_000;
/// A config entry's text, at most, in UTF-8 bytes.
pub const MAX_CONFIG_TEXT_BYTES: usize = 4_096;
/// Distinct config keys the read models keep per attempt and member: a source declaring
/// more has the rest skipped, said.
pub const MAX_CONFIG_KEYS: usize = 1_000;

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

/// Ingest's own refusal of a batch for good: the batch is not one it can take, ever (its
/// reason says why). Any other answer that is not transient is not one ingest gives a batch
/// (an HTTP 404 from a proxy on the way reads as UNIMPLEMENTED): the batch is kept and sent
/// again, as after a transient one, rather than quarantined for what is not its fault.
pub fn refuses_batch(code: Code) -> bool {
    code == Code::InvalidArgument
}

/// Whether `status` is a gRPC server's answer (its response had a gRPC content type), not
/// one the client made of an HTTP answer with no gRPC status in it: a proxy or ingress on
/// the way with no route for a call answers HTTP 404, which reads as UNIMPLEMENTED too.
pub fn from_grpc_server(status: &tonic::Status) -> bool {
    (status.metadata().get("content-type"))
        .and_then(|kind| kind.to_str().ok())
        .is_some_and(|kind| kind.starts_with("application/grpc"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_grpc_servers_answer_is_its_own() {
        let mut headers = tonic::codegen::http::HeaderMap::new();
        headers.insert("content-type", "application/grpc".parse().unwrap());
        headers.insert("grpc-status", "12".parse().unwrap());
        let served = tonic::Status::from_header_map(&headers).unwrap();
        assert_eq!(served.code(), Code::Unimplemented);
        assert!(from_grpc_server(&served));
        let mapped = tonic::Status::unimplemented(
            "grpc-status header missing, mapped from HTTP status code 404",
        );
        assert!(!from_grpc_server(&mapped));
    }

    /// The contract's own bounds (`limits.py`), as `NAME: Final = EXPRESSION` lines.
    const LIMITS: &str = include_str!("../../../contract/src/tuneplane/telemetry/v1/limits.py");

    /// The value of a limit whose expression is a product of integers and earlier limits.
    fn limit(name: &str) -> Option<usize> {
        let mut known: std::collections::HashMap<&str, usize> = Default::default();
        for line in LIMITS.lines() {
            let Some((left, expression)) = line.split_once(": Final = ") else {
                continue;
            };
            let value = expression.split('*').try_fold(1usize, |product, factor| {
                let factor = factor.trim();
                let value =
                    (factor.replace('_', "").parse().ok()).or_else(|| known.get(factor).copied());
                value.map(|v| product * v)
            });
            if let Some(value) = value {
                known.insert(left.trim(), value);
            }
        }
        known.get(name).copied()
    }

    #[test]
    fn bounds_are_the_contracts() {
        for (name, ours) in [
            ("MAX_BATCH_POINTS", MAX_BATCH_POINTS),
            ("MAX_BATCH_BYTES", MAX_BATCH_BYTES),
            ("MAX_BATCH_RICH", MAX_BATCH_RICH),
            ("MAX_BATCH_SESSION_STARTS", MAX_BATCH_SESSION_STARTS),
            ("MAX_BATCH_SERIES", MAX_BATCH_SERIES),
            ("MAX_POSITION_STATE_BYTES", MAX_POSITION_STATE_BYTES),
            ("MAX_POSITION_FILE_BYTES", MAX_POSITION_FILE_BYTES),
            ("MAX_RUN_PATH_BYTES", MAX_RUN_PATH_BYTES),
            ("MAX_BATCH_CONFIG", MAX_BATCH_CONFIG),
            ("MAX_CONFIG_TEXT_BYTES", MAX_CONFIG_TEXT_BYTES),
            ("MAX_CONFIG_KEYS", MAX_CONFIG_KEYS),
            ("MAX_NAME_BYTES", crate::sources::names::MAX_NAME_BYTES),
        ] {
            assert_eq!(limit(name), Some(ours), "{name}");
        }
    }
}
