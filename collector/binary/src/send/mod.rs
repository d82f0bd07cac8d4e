//! Sends sealed batches to ingest in spool order over gRPC/TLS, and deletes a batch only
//! after ingest's ACK (Kafka holds it). Up to `in_flight` batches are on the wire at once; a
//! batch whose first try fails is retried alone with capped exponential backoff and jitter
//! (backon), byte for byte the same, so a resend is the same identity. A late delivery's
//! batches each carry their audit path in the credential's tree (`with_proofs`).

mod checkpoints;
pub mod target;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder, ExponentialBuilder};
use tonic::transport::Channel;
use tonic::Request;

use crate::collect::fence::failed;
use crate::contract::proto::push_batch_reply::Outcome;
use crate::contract::proto::telemetry_ingest_client::TelemetryIngestClient;
use crate::contract::proto::{PushBatchReply, PushBatchRequest};
use crate::contract::{code_name, refuses_batch, transient};
use crate::failpoints;
use crate::send::target::{endpoint, Target, Token};
use crate::spool::{SealedBatch, Shared};
use crate::textfile::Tally;

/// How often a wait between two tries looks whether sending must stop.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The batch should be sent again later; the message says why not now.
#[derive(Debug)]
pub struct Transient(pub String);

pub struct Sender {
    spool: Shared,
    client: TelemetryIngestClient<Channel>,
    runtime: tokio::runtime::Runtime,
    token: Token,
    in_flight: usize,
    jitter_seed: u64,
    /// A late delivery's proof of each batch (`tuneplane-delivery-proof`), by sequence.
    proofs: Option<HashMap<u64, String>>,
    /// Where each ACK is counted for the textfile, if it is written.
    tally: Option<Arc<Tally>>,
    pub sent_batches: u64,
    pub sent_points: u64,
}

type Answer = Result<PushBatchReply, tonic::Status>;

impl Sender {
    pub fn new(spool: Shared, target: &Target, in_flight: usize) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the sender: {e}"))?;
        let pem =
            std::fs::read(&target.ca_file).map_err(|e| failed("CA bundle", &target.ca_file, &e))?;
        let endpoint = endpoint(&target.address, pem, target.server_name.as_deref())?;
        let channel = {
            let _inside = runtime.enter();
            endpoint.connect_lazy()
        };
        Ok(Self {
            spool,
            client: TelemetryIngestClient::new(channel),
            runtime,
            token: target.token.clone(),
            in_flight,
            jitter_seed: {
                let mut seed = [0u8; 8];
                getrandom::fill(&mut seed).map_err(|e| format!("no random seed: {e}"))?;
                u64::from_le_bytes(seed)
            },
            proofs: None,
            tally: None,
            sent_batches: 0,
            sent_points: 0,
        })
    }

    /// Each batch sent carries its proof in `proofs`; one without is not sent.
    pub fn with_proofs(mut self, proofs: HashMap<u64, String>) -> Self {
        self.proofs = Some(proofs);
        self
    }

    /// Each ACK counted in `tally` too.
    pub fn with_tally(mut self, tally: Arc<Tally>) -> Self {
        self.tally = Some(tally);
        self
    }

    fn request(&self, batch: &SealedBatch) -> Result<Request<PushBatchRequest>, Transient> {
        let bearer = self.token.bearer()?;
        let mut request = Request::new(PushBatchRequest {
            batch: batch.payload.clone(),
        });
        request.metadata_mut().insert("authorization", bearer);
        if let Some(proofs) = &self.proofs {
            let proof = proofs.get(&batch.sequence).ok_or_else(|| {
                Transient(format!(
                    "batch {} is not one the delivery credential covers",
                    batch.sequence
                ))
            })?;
            let value = proof
                .parse()
                .map_err(|_| Transient(format!("batch {}: no usable proof", batch.sequence)))?;
            request
                .metadata_mut()
                .insert(crate::deliver::PROOF_HEADER, value);
        }
        Ok(request)
    }

    /// ACK → delete; a permanent refusal → quarantine; else Transient.
    fn settle(&mut self, batch: &SealedBatch, answer: Answer) -> Result<(), Transient> {
        failpoints::reach("send"); // the batch was on the wire; its answer is not acted on yet
        let reply = match answer {
            Ok(reply) => reply,
            Err(status) if refuses_batch(status.code()) => {
                let reason = format!("{}: {}", code_name(status.code()), status.message());
                self.spool
                    .get()
                    .quarantine(batch.sequence, &reason)
                    .map_err(|e| Transient(e.to_string()))?;
                log::error!("batch {} refused and quarantined: {reason}", batch.sequence);
                return Ok(());
            }
            Err(status) => {
                let code = status.code();
                let mut said = format!(
                    "batch {}: {}: {}",
                    batch.sequence,
                    code_name(code),
                    status.message()
                );
                if !transient(code) {
                    said += "; not an answer ingest gives a batch (a proxy or another service \
                             at its address?): kept, and sent again";
                    log::warn!("{said}"); // (a window's first failure is retried at once, unsaid)
                }
                return Err(Transient(said));
            }
        };
        if reply.outcome == Outcome::Rejected as i32 {
            self.spool
                .get()
                .quarantine(batch.sequence, &reply.reason)
                .map_err(|e| Transient(e.to_string()))?;
            log::error!(
                "batch {} rejected and quarantined: {}",
                batch.sequence,
                reply.reason
            );
            return Ok(());
        }
        // Only a durable answer lets the batch go: an empty reply (an OK status from something
        // that is not ingest) or an outcome this build does not know keeps it, tried again.
        if reply.outcome != Outcome::Durable as i32
            && reply.outcome != Outcome::DuplicateSafe as i32
        {
            return Err(Transient(format!(
                "batch {}: ingest answered outcome {} without saying it holds it",
                batch.sequence, reply.outcome
            )));
        }
        failpoints::reach("ack");
        self.spool
            .get()
            .acknowledge(batch.sequence)
            .map_err(|e| Transient(e.to_string()))?;
        failpoints::reach("delete");
        self.sent_batches += 1;
        self.sent_points += batch.points;
        if let Some(tally) = &self.tally {
            tally.acked(batch.points, crate::collect::now());
        }
        Ok(())
    }

    /// Puts `batches` on the wire at once; the answers in their order.
    fn push_all(&self, batches: &[SealedBatch]) -> Vec<Result<Answer, Transient>> {
        let requests: Vec<_> = batches.iter().map(|b| self.request(b)).collect();
        self.runtime.block_on(async {
            let calls = requests.into_iter().map(|request| {
                let mut client = self.client.clone();
                async move {
                    match request {
                        Ok(request) => Ok(client
                            .push_batch(request)
                            .await
                            .map(tonic::Response::into_inner)),
                        Err(why) => Err(why),
                    }
                }
            });
            futures_util::future::join_all(calls).await
        })
    }

    /// Sends until nothing is pending (or `stop`); a batch still failing after
    /// `give_up_after` stays spooled and its Transient is returned.
    pub fn run_once(
        &mut self,
        give_up_after: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<usize, Transient> {
        let mut handled = 0;
        while !stop() {
            let batches = self
                .spool
                .get()
                .pending(self.in_flight)
                .map_err(|e| Transient(e.to_string()))?;
            if batches.is_empty() {
                break;
            }
            // Every answer is acted on first; only then are the failed batches retried,
            // so a batch giving up never throws away the others' ACKs.
            let mut failed = Vec::new();
            for (batch, answer) in batches.iter().zip(self.push_all(&batches)) {
                match answer.and_then(|answer| self.settle(batch, answer)) {
                    Ok(()) => handled += 1,
                    Err(_) => failed.push(batch),
                }
            }
            for batch in failed {
                if stop() {
                    return Ok(handled);
                }
                self.send_with_retries(batch, give_up_after, stop)?;
                handled += 1;
            }
            self.spool.get().give_back(batches);
        }
        Ok(handled)
    }

    /// Tries `batch` until it is settled, `give_up_after` has passed, or `stop` (a drain's
    /// end: the wait between two tries ends with it).
    fn send_with_retries(
        &mut self,
        batch: &SealedBatch,
        give_up_after: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<(), Transient> {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(5))
            .with_jitter()
            // Each collector its own jitter: collectors that lost ingest together do not
            // come back in lockstep.
            .with_jitter_seed(self.jitter_seed)
            .with_total_delay(Some(give_up_after))
            .without_max_times();
        let mut waits = backoff.build();
        loop {
            let answer = self
                .push_all(std::slice::from_ref(batch))
                .pop()
                .unwrap_or_else(|| Err(Transient("no answer".into())));
            let failed = match answer.and_then(|answer| self.settle(batch, answer)) {
                Ok(()) => return Ok(()),
                Err(failed) => failed,
            };
            let Some(wait) = waits.next().filter(|_| !stop()) else {
                return Err(failed);
            };
            log::warn!(
                "retrying batch {} in {wait:?}: {}",
                batch.sequence,
                failed.0
            );
            let until = Instant::now() + wait;
            while !stop() && Instant::now() < until {
                std::thread::sleep(STOP_CHECK.min(until - Instant::now()));
            }
            if stop() {
                return Err(failed);
            }
        }
    }
}
