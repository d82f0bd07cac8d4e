//! The collector process: the integration artifact's static config sealed as it starts, a
//! reader thread fills the spool, a sender thread drains it, and the main thread waits for
//! SIGTERM (or idleness, when asked), then drains: the sources read to their current end,
//! sending kept up for the drain time, the rest left spooled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::flag::Flag;
use super::Config;
use crate::collect::config::seal_artifact;
use crate::collect::{now, SourceReader};
use crate::follow::{Follower, POLL};
use crate::send::Sender;
use crate::spool::{lock, room, Shared, Spool};
use crate::textfile::{self, Tally, Textfile};

/// An idle sender looks at the spool this often all the same (a seal rings it at once).
const SEND_IDLE: Duration = Duration::from_secs(1);

/// Past the drain time, how long a thread is waited for before it is left behind.
const GRACE: Duration = Duration::from_secs(2);

/// The thread's result if it ends by `deadline`; else None (the thread is left running).
pub fn ended_by<T>(thread: thread::JoinHandle<T>, deadline: Instant) -> Option<T> {
    while !thread.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    if thread.is_finished() {
        thread.join().ok()
    } else {
        None
    }
}

/// `ended_by`, a thread left behind said.
fn joined<T>(thread: thread::JoinHandle<T>, deadline: Instant, what: &str) -> Option<T> {
    let ended = ended_by(thread, deadline);
    if ended.is_none() {
        log::error!("{what} did not end within the drain time; the collector exits without it");
    }
    ended
}

/// The threads' flags: stop reading, stop sending, the reader's doorbell to the sender, the
/// doorbell that wakes the reader (a source changed, or stop), and the one that cuts short
/// the gap it keeps between rounds (stop, or a new spool's checkpoints answered: the
/// reader settles them, and nothing is sent before it has).
#[derive(Default)]
pub struct Flags {
    pub stopping: Flag,
    send_stop: Flag,
    sealed: Flag,
    changed: Flag,
    hurry: Flag,
    idle: AtomicBool,
}

impl Flags {
    /// Stop reading (then drain): wakes a reader waiting for its sources to change.
    pub fn stop(&self) {
        self.stopping.set();
        self.changed.set();
        self.hurry.set();
    }
}

/// While sources keep growing, a round of reading starts at most this often. Each round
/// seals one batch a file (its transaction synced to disk) and the sender sends it, so this
/// sets the collector's cost beside a busy job and how fresh its points are.
pub const ROUND: Duration = Duration::from_secs(1);
/// Any two rounds are this far apart at least, whatever they found: a writer appending a byte
/// at a time to a record it never finishes wakes the reader with each write.
const MIN_GAP: Duration = Duration::from_millis(100);

/// An idle reader sleeps until a source changes (or its follower's patience runs out), and
/// reads at most every `ROUND` while sources keep growing: a file written in many small
/// appends still makes batches of a round's worth. `sealed` is when the last round that
/// sealed a batch began (a round that found nothing, woken by a write's closing, does not
/// count), so a write to a quiet file is read at once.
fn wait_for_change(flags: &Flags, follower: &Follower, sealed: Option<Instant>, last: Instant) {
    flags.changed.take(follower.patience());
    let since = sealed.map_or(ROUND, |at| at.elapsed());
    let floor = MIN_GAP.saturating_sub(last.elapsed());
    flags.hurry.take(ROUND.saturating_sub(since).max(floor));
}

fn read_loop(
    mut reader: SourceReader,
    flags: &Arc<Flags>,
    drain: Duration,
    mountinfo: String,
    tally: &Tally,
) -> (SourceReader, bool) {
    let woken = Arc::clone(flags);
    let mut follower = Follower::start(mountinfo, move || woken.changed.set());
    let mut sealed = 0;
    let mut unsettled = !reader.settled();
    // Whether batches were sealed since it last looked; if so, the sender is rung. So it is
    // when the spool's beginning was settled (the sender waits for it, or sends nothing).
    let mut ring = |reader: &SourceReader| {
        tally.read(&reader.counters);
        if unsettled && reader.settled() {
            unsettled = false;
            flags.sealed.set();
        }
        let rung = reader.counters.batches != sealed;
        if rung {
            sealed = reader.counters.batches;
            flags.sealed.set();
        }
        rung
    };
    let mut sealing_round = None;
    let mut unwritable = false; // said once, until the spool takes a write again
    while !flags.stopping.is_set() {
        let started = Instant::now();
        let result = reader.run_once();
        if ring(&reader) {
            sealing_round = Some(started);
        }
        if result.is_ok() && unwritable {
            unwritable = false;
            log::info!("the spool can be written again: reading goes on where it paused");
        }
        match result {
            Ok(true) => {
                flags.idle.store(true, Ordering::Relaxed);
                follower.watch(&reader.watches());
                wait_for_change(flags, &follower, sealing_round, started);
                reader.relist();
            }
            Ok(false) => {
                flags.idle.store(false, Ordering::Relaxed);
                if reader.spool_full().unwrap_or(true) {
                    flags.stopping.wait(POLL);
                }
            }
            Err(e) => {
                if !unwritable {
                    unwritable = true;
                    let full = matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DiskFull));
                    let why = if full {
                        "its filesystem is full".to_owned()
                    } else {
                        e.to_string()
                    };
                    log::error!(
                        "the spool cannot be written ({why}): reading pauses, the sources keep \
                         the data, and nothing sealed is lost; it goes on when it can write"
                    );
                }
                flags.stopping.wait(POLL);
            }
        }
    }
    // Stopping (the attempt ended): take what the sources hold now, as far as the spool and
    // the drain time allow, so the last steps written are not left unread.
    let deadline = Instant::now() + drain;
    reader.drain();
    reader.relist();
    reader.room_left(); // as it is now, not as the last round found it
    let mut read_all = false;
    while Instant::now() < deadline && !reader.spool_full().unwrap_or(true) {
        let done = reader.run_once();
        ring(&reader);
        match done {
            Ok(false) => {}
            Ok(true) => {
                read_all = true;
                break;
            }
            Err(e) => {
                log::error!("the spool cannot be written: {e}; the drain stops reading");
                break;
            }
        }
    }
    if !read_all {
        log::warn!("the drain ended before the sources were read to their end");
    }
    // A new spool's checkpoints answered only now are settled by the reader, or nothing of
    // it is sent: it waits for the sender's doorbell until the drain's end.
    while read_all && !reader.settled() && Instant::now() < deadline {
        flags
            .changed
            .take(deadline.saturating_duration_since(Instant::now()));
        if let Err(e) = reader.run_once() {
            log::error!("the spool cannot be written: {e}; the drain stops reading");
            break;
        }
        flags.sealed.set(); // settled, or read again: the sender looks
    }
    (reader, read_all)
}

/// Waits between two asks for a new spool's checkpoints, doubling up to the last.
const ASK_AGAIN: [u64; 6] = [1, 2, 4, 8, 15, 30];

fn send_loop(mut sender: Sender, flags: &Flags, retry: Duration) -> Sender {
    let stop = || flags.send_stop.is_set();
    let mut asked = 0;
    while !stop() {
        match sender.settled() {
            Ok(true) => {}
            Ok(false) => {
                // The reader settles the answer at its next step, at once, and rings.
                flags.hurry.set();
                flags.changed.set();
                flags.sealed.take(SEND_IDLE);
                continue;
            }
            Err(e) => {
                // Once the drain has begun its time is short: ask every second, and a long
                // wait before it ends at the drain's start.
                let draining = flags.stopping.is_set();
                let wait = if draining {
                    1
                } else {
                    ASK_AGAIN[asked.min(ASK_AGAIN.len() - 1)]
                };
                if asked.is_power_of_two() || asked == 0 {
                    log::warn!(
                        "this spool is new: nothing is sent before the member's checkpoints \
                         are known ({}); asked again in {wait} s",
                        e.0
                    );
                }
                asked += 1;
                let woken_by = if draining {
                    &flags.send_stop
                } else {
                    &flags.stopping
                };
                woken_by.wait(Duration::from_secs(wait));
                continue;
            }
        }
        match sender.run_once(retry, &stop) {
            Ok(0) => {
                flags.sealed.take(SEND_IDLE);
            }
            Ok(_) => {}
            Err(e) => log::warn!("ingest unreachable, batches stay spooled: {}", e.0),
        }
    }
    sender
}

/// SIGTERM and SIGINT set `stopping` (from a thread of their own: a flag's condition
/// variable may not be touched in a signal handler).
fn on_signals(flags: &Arc<Flags>) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    let flags = Arc::clone(flags);
    thread::spawn(move || {
        for _ in signals.forever() {
            flags.stop();
        }
    });
    Ok(())
}

fn spool(config: &Config) -> Result<Spool, String> {
    Spool::open(&config.spool, &config.owner, &config.mountinfo).map_err(|e| e.0)
}

/// How a collector's run ended.
pub struct Ended {
    /// Batches left in the spool, quarantined ones included.
    pub undelivered: u64,
    /// Reading did not end within the drain time: not all the sources held was read.
    pub cut_short: bool,
}

impl Ended {
    pub fn code(&self) -> u8 {
        if self.undelivered == 0 && !self.cut_short {
            0
        } else {
            3
        }
    }
}

/// Runs the collector until SIGTERM (or idleness, when asked); the exit status (3 when
/// batches are left undelivered).
pub fn collect(config: &Config) -> u8 {
    let flags = Arc::new(Flags::default());
    if let Err(e) = on_signals(&flags) {
        eprintln!("tuneplane-collector run: cannot handle signals: {e}");
        return 2;
    }
    match collect_with(config, &flags) {
        Ok(ended) => ended.code(),
        Err(why) => {
            eprintln!("tuneplane-collector run: {why}");
            2
        }
    }
}

/// Runs one member's collector until `flags` says stop (or idleness, when asked), then
/// drains; a spool or target that cannot be opened is the error.
pub fn collect_with(config: &Config, flags: &Arc<Flags>) -> Result<Ended, String> {
    let _held = lock::hold(&config.spool, &config.mountinfo).map_err(|e| e.0)?;
    // The reader and the sender share one connection (`Shared`); the main thread's counts
    // are read through one of its own.
    let shared = Shared::new(spool(config)?);
    // Once per start: a setting of the artifact's is sent again, its latest value kept.
    seal_artifact(
        &mut shared.get(),
        &config.artifact_config,
        config.bounds.max_bytes,
        now(),
    )
    .map_err(|e| format!("spool {}: {e}", config.spool.display()))?;
    let tally = Arc::new(Tally::default());
    let sender = Sender::new(shared.clone(), &config.target, config.in_flight)?
        .with_tally(Arc::clone(&tally));
    let status = spool(config)?;
    let reader = SourceReader::new(
        shared,
        config.sources.clone(),
        config.bounds,
        config.fence.clone(),
    );
    let drain = Duration::from_secs(config.drain_seconds);
    let reading = {
        let (flags, mountinfo) = (Arc::clone(flags), config.mountinfo.clone());
        let tally = Arc::clone(&tally);
        thread::spawn(move || read_loop(reader, &flags, drain, mountinfo, &tally))
    };
    let sending = {
        let flags = Arc::clone(flags);
        let retry = config.retry;
        thread::spawn(move || send_loop(sender, &flags, retry))
    };
    let pending = || status.pending_count().unwrap_or(u64::MAX);
    // The figures for node_exporter, looked at only when the file is due.
    let look = || {
        let free = room::free_bytes(&config.spool);
        let held = status.holding().ok();
        textfile::values(held, config.bounds.spool_bytes, free, &tally, now())
    };
    let mut report = config
        .textfile_dir
        .as_deref()
        .map(|dir| Textfile::new(dir, &config.owner));
    loop {
        let mut wait = if !config.exit_when_idle {
            Duration::from_secs(3600)
        } else if flags.idle.load(Ordering::Relaxed) && pending() == 0 {
            flags.stop();
            break;
        } else {
            Duration::from_millis(100)
        };
        if let Some(file) = &mut report {
            wait = wait.min(file.write_if_due(Instant::now(), look));
        }
        if flags.stopping.wait(wait) {
            break;
        }
    }
    let deadline = Instant::now() + drain;
    // The drain time bounds the exit whatever a source does: a thread still busy then (a
    // hostile file, a stuck call) is left behind, and the spool, whose every change is a
    // transaction, holds what was sealed.
    let reader = joined(reading, deadline + GRACE, "reading");
    while pending() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    flags.send_stop.set();
    flags.sealed.set(); // wakes an idle sender to see it
    let sender = joined(sending, Instant::now() + config.retry + GRACE, "sending");
    let left = pending();
    if left > 0 {
        log::warn!(
            "drain ended with {left} batches left in the spool {}",
            config.spool.display()
        );
    }
    let quarantined = status.quarantined().unwrap_or_default();
    for (sequence, reason) in &quarantined {
        log::error!(
            "batch {sequence} is quarantined in the spool {}: {reason}",
            config.spool.display()
        );
    }
    // Reading cut short (its thread left behind, or the drain ended first): what the sources
    // held was not all read, so not all delivered.
    let cut_short = !reader.as_ref().is_some_and(|(_, read_all)| *read_all);
    let counters = reader.map(|(r, _)| r.counters).unwrap_or_default();
    let undelivered = left + quarantined.len() as u64;
    let ended = Ended {
        undelivered,
        cut_short,
    };
    match &mut report {
        Some(file) if ended.code() == 0 => file.remove(),
        Some(file) => file.write(&look()),
        None => {}
    }
    log::info!(
        "collector of {} done: {} points and {} rich records read, {} points sent, \
         {} refused, {} problems, {undelivered} batches not delivered",
        config.owner.member,
        counters.points,
        counters.rich,
        sender.map_or(0, |s| s.sent_points),
        counters.refused,
        counters.problems,
    );
    Ok(ended)
}
