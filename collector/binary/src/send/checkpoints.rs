//! Before a new spool sends anything, its member's checkpoints are asked of ingest
//! (`GetCheckpoints`, under the same workload token) and kept in the spool for the reader to
//! settle (`spool::resume`). An ingest of before, which does not know the call, answers
//! UNIMPLEMENTED: the spool is settled with none, and the log says what that risks. An HTTP
//! 404 with no gRPC status (a proxy or ingress on the way with no route for the call) reads
//! as UNIMPLEMENTED too, but says nothing of ingest: it is asked again, as after UNAVAILABLE,
//! since settling with none would store again what an earlier spool delivered.

use tonic::Request;

use super::{Sender, Transient};
use crate::contract::proto::{GetCheckpointsRequest, SourcePosition};
use crate::contract::{code_name, from_grpc_server};
use crate::spool::Resume;

/// Pages one answer may take at most: a member of this many thousand files is not one.
const MAX_PAGES: usize = 10_000;

impl Sender {
    /// Whether the spool is settled and its batches may be sent; when it is new, asks ingest
    /// for the member's checkpoints first (Transient: ingest did not answer).
    pub fn settled(&mut self) -> Result<bool, Transient> {
        let state = self
            .spool
            .get()
            .resume_state()
            .map_err(|e| Transient(e.to_string()))?;
        match state {
            Resume::Settled => Ok(true),
            Resume::Answered => Ok(false), // the reader settles them
            Resume::Pending => {
                let (positions, epochs) = match self.ask() {
                    Ok(answer) => answer,
                    Err(status)
                        if status.code() == tonic::Code::Unimplemented
                            && from_grpc_server(&status) =>
                    {
                        log::warn!(
                            "ingest does not answer GetCheckpoints (it is older than this \
                             collector): this new spool starts at the sources' beginning, and \
                             points an earlier spool of this member delivered are stored again"
                        );
                        (Vec::new(), Vec::new())
                    }
                    Err(status) => {
                        let not_ingest = if status.code() == tonic::Code::Unimplemented {
                            " (an HTTP 404, not ingest's answer: a proxy or gateway on the way \
                             has no route for it)"
                        } else {
                            ""
                        };
                        return Err(Transient(format!(
                            "the member's checkpoints: {}: {}{not_ingest}",
                            code_name(status.code()),
                            status.message()
                        )));
                    }
                };
                if !epochs.is_empty() {
                    log::info!(
                        "this spool follows {} earlier spools of the member ({}): {} \
                         checkpoints to resume from",
                        epochs.len(),
                        epochs.join(", "),
                        positions.len()
                    );
                }
                self.spool
                    .get()
                    .answer(&positions, &epochs)
                    .map_err(|e| Transient(e.to_string()))?;
                Ok(false)
            }
        }
    }

    /// Every page of the member's checkpoints, and its earlier spools' epochs.
    fn ask(&self) -> Result<(Vec<SourcePosition>, Vec<String>), tonic::Status> {
        let (mut positions, mut epochs) = (Vec::new(), Vec::new());
        let mut after = (String::new(), String::new());
        for _ in 0..MAX_PAGES {
            let bearer = self
                .token
                .bearer()
                .map_err(|why| tonic::Status::unavailable(why.0))?;
            let mut request = Request::new(GetCheckpointsRequest {
                after_source: after.0.clone(),
                after_file: after.1.clone(),
            });
            request.metadata_mut().insert("authorization", bearer);
            let mut client = self.client.clone();
            let page = self
                .runtime
                .block_on(client.get_checkpoints(request))?
                .into_inner();
            if epochs.is_empty() {
                epochs = page.spool_epochs;
            }
            if let Some(last) = page.positions.last() {
                after = (last.source.clone(), last.file.clone());
            }
            let empty = page.positions.is_empty();
            positions.extend(page.positions);
            if !page.more || empty {
                return Ok((positions, epochs));
            }
        }
        Err(tonic::Status::out_of_range(format!(
            "more than {MAX_PAGES} pages of checkpoints"
        )))
    }
}
