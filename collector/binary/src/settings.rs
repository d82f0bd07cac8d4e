//! What `run` reads from its environment, parsed once at its start: on a node the agent
//! sets these for each launch; by hand, flags may stand in for some. A malformed setting is
//! refused by name (every problem at once); a blank one reads as unset.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::failpoints;
use crate::sources::repr::py_str;

pub const SPOOL_ROOT: &str = "TUNEPLANE_TELEMETRY_SPOOL_ROOT";
pub const TARGET: &str = "TUNEPLANE_TELEMETRY_TARGET";
pub const TRUST_BUNDLE: &str = "TUNEPLANE_TELEMETRY_TRUST_BUNDLE";
pub const SPOOL_BYTES: &str = "TUNEPLANE_TELEMETRY_SPOOL_BYTES";
pub const DRAIN_SECONDS: &str = "TUNEPLANE_TELEMETRY_DRAIN_SECONDS";
/// The mount table the spool root's filesystem is judged from (for hosts whose /proc is
/// masked, and fault tests).
pub const MOUNT_TABLE: &str = "TUNEPLANE_COLLECTOR_MOUNT_TABLE";
/// How long a reader opening sources as the training user may take to answer before it is
/// replaced.
pub const READER_SECONDS: &str = "TUNEPLANE_COLLECTOR_READER_SECONDS";
/// How long one round of sending retries a failing batch before leaving it to the next.
pub const RETRY_SECONDS: &str = "TUNEPLANE_COLLECTOR_RETRY_SECONDS";
/// node_exporter's textfile-collector directory, where a running collector writes its figures
/// (`textfile`); unset, none are written.
pub const METRICS_TEXTFILE_DIR: &str = "TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR";
pub const DEFAULT_READER_SECONDS: u64 = 10;
pub const DEFAULT_RETRY_SECONDS: u64 = 5;
/// The spool's cap when SPOOL_BYTES is unset (256 MiB).
pub const DEFAULT_SPOOL_BYTES: u64 = 256 * 1024 * 1024;
/// The drain's time when DRAIN_SECONDS is unset.
pub const DEFAULT_DRAIN_SECONDS: u64 = 30;

#[derive(Debug)]
pub struct Settings {
    pub spool_root: Option<PathBuf>,
    pub target: Option<String>,
    pub trust_bundle: Option<PathBuf>,
    pub spool_bytes: u64,
    pub drain_seconds: u64,
    pub reader_seconds: u64,
    pub retry_seconds: u64,
    pub failpoints: Vec<(String, u32)>,
    pub mount_table: PathBuf,
    pub metrics_textfile_dir: Option<PathBuf>,
}

/// A whole number above zero.
fn positive(raw: &str) -> Result<u64, String> {
    let value: i128 = raw
        .trim()
        .parse()
        .map_err(|_| format!("must be a whole number, got {}", py_str(raw)))?;
    if value <= 0 {
        return Err(format!("must be positive, got {value}"));
    }
    u64::try_from(value).map_err(|_| format!("must be at most {}, got {value}", u64::MAX))
}

impl Settings {
    pub fn from_environ(env: &HashMap<String, String>) -> Result<Self, String> {
        let get = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let mut problems = Vec::new();
        let mut number = |name: &str, default: u64| match get(name).map(positive) {
            None => default,
            Some(Ok(value)) => value,
            Some(Err(why)) => {
                problems.push(format!("{name} {why}"));
                default
            }
        };
        let spool_bytes = number(SPOOL_BYTES, DEFAULT_SPOOL_BYTES);
        let drain_seconds = number(DRAIN_SECONDS, DEFAULT_DRAIN_SECONDS);
        let reader_seconds = number(READER_SECONDS, DEFAULT_READER_SECONDS);
        let retry_seconds = number(RETRY_SECONDS, DEFAULT_RETRY_SECONDS);
        let failpoints = match get(failpoints::VARIABLE).map(failpoints::parse) {
            None => Vec::new(),
            Some(Ok(points)) => points,
            Some(Err(why)) => {
                problems.push(format!("{} {why}", failpoints::VARIABLE));
                Vec::new()
            }
        };
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        Ok(Self {
            spool_root: get(SPOOL_ROOT).map(PathBuf::from),
            target: get(TARGET).map(str::to_owned),
            trust_bundle: get(TRUST_BUNDLE).map(PathBuf::from),
            spool_bytes,
            drain_seconds,
            reader_seconds,
            retry_seconds,
            failpoints,
            mount_table: get(MOUNT_TABLE)
                .map_or_else(|| "/proc/self/mountinfo".into(), PathBuf::from),
            metrics_textfile_dir: get(METRICS_TEXTFILE_DIR).map(PathBuf::from),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_setting_with_its_default() {
        for help in [crate::run::AFTER, crate::slurm::AFTER] {
            for name in [
                SPOOL_BYTES,
                DRAIN_SECONDS,
                MOUNT_TABLE,
                RETRY_SECONDS,
                METRICS_TEXTFILE_DIR,
            ] {
                assert!(help.contains(name), "{name} missing from {help}");
            }
            assert!(help.contains(&format!("({DEFAULT_SPOOL_BYTES})")), "{help}");
            assert!(
                help.contains(&format!("({DEFAULT_DRAIN_SECONDS})")),
                "{help}"
            );
        }
        for name in [TARGET, TRUST_BUNDLE, SPOOL_ROOT, READER_SECONDS] {
            assert!(crate::run::AFTER.contains(name), "{name}");
        }
    }
}
