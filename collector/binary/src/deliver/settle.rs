//! Before a late delivery sends anything, its spool must be settled: a spool whose
//! collector never reached ingest never learnt the member's checkpoints, and may hold what an
//! earlier spool of the member delivered.

use crate::collect::now;
use crate::send::Sender;
use crate::spool::{Resume, Settled, Shared};

/// Why a spool may not be delivered (yet).
pub enum Unsettled {
    /// Ingest did not answer: asked again while patience lasts.
    Unanswered(String),
    /// Delivering it could double points.
    Refused(String),
}

/// A spool whose collector never learnt the member's checkpoints may hold what an earlier
/// spool of the member delivered: asked now (under the delivery credential), it is settled
/// when the member has none; else delivering it could double points, and it is refused.
pub fn settle(sender: &mut Sender, shared: &Shared) -> Result<(), Unsettled> {
    let failed = |e: rusqlite::Error| Unsettled::Refused(e.to_string());
    let state = shared.get().resume_state().map_err(failed)?;
    if state == Resume::Settled {
        return Ok(());
    }
    if state == Resume::Pending {
        sender.settled().map_err(|e| Unsettled::Unanswered(e.0))?;
    }
    let mut spool = shared.get();
    let checkpoints = spool.checkpoints().map_err(failed)?;
    if !checkpoints.is_empty() {
        return Err(Unsettled::Refused(format!(
            "this spool's collector never learnt where an earlier spool of the member had \
             delivered ({} checkpoints): its batches may repeat those points. Run \
             `tuneplane-collector run` on it, where its sources are, to settle it first",
            checkpoints.len()
        )));
    }
    spool.settle(Settled::default(), 0, now()).map_err(failed)
}
