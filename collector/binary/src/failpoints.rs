//! Named crash points for fault tests, compiled in only with the `failpoints` feature.
//!
//! `TUNEPLANE_COLLECTOR_FAILPOINTS="seal=3"` makes the collector SIGKILL itself the third
//! time it passes `seal` (several as `read=2,ack=5`). The points are the steps a batch
//! goes through:
//!
//! ```text
//! read    records decoded, not yet sealed
//! seal    batch and the source position it advances committed to the spool
//! send    batch on the wire, reply not yet read
//! ack     ingest's reply read (Kafka holds the batch), batch not yet deleted
//! delete  batch deleted from the spool
//! ```
//!
//! A build without the feature refuses the setting (a fault test on such a build would
//! pass without a fault), and passing a point costs nothing.

pub const POINTS: [&str; 5] = ["read", "seal", "send", "ack", "delete"];
pub const VARIABLE: &str = "TUNEPLANE_COLLECTOR_FAILPOINTS";

/// `POINT=N,...` as (point, N), or why not.
pub fn parse(text: &str) -> Result<Vec<(String, u32)>, String> {
    let mut armed = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let parsed = item
            .split_once('=')
            .filter(|(name, _)| POINTS.contains(name))
            .and_then(|(name, n)| {
                Some((name.to_owned(), n.parse::<u32>().ok().filter(|&n| n >= 1)?))
            });
        match parsed {
            Some(point) => armed.push(point),
            None => {
                return Err(format!(
                    "has '{item}', which is not POINT=N with POINT one of {} and N >= 1",
                    POINTS.join(", ")
                ))
            }
        }
    }
    Ok(armed)
}

#[cfg(feature = "failpoints")]
mod armed {
    use std::sync::Mutex;

    static ARMED: Mutex<Vec<(String, u32)>> = Mutex::new(Vec::new());

    pub fn arm(points: Vec<(String, u32)>) -> Result<(), String> {
        *ARMED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = points;
        Ok(())
    }

    pub fn reach(point: &str) {
        let mut armed = ARMED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, left)) = armed.iter_mut().find(|(name, _)| name == point) {
            *left -= 1;
            if *left == 0 {
                // SAFETY: kill and getpid have no preconditions.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
        }
    }
}

#[cfg(not(feature = "failpoints"))]
mod armed {
    pub fn arm(points: Vec<(String, u32)>) -> Result<(), String> {
        if points.is_empty() {
            Ok(())
        } else {
            Err("is set, but this build has no failpoints (cargo feature `failpoints`)".into())
        }
    }

    #[inline(always)]
    pub fn reach(_point: &str) {}
}

pub use armed::{arm, reach};
