//! The collector process: a reader thread fills the spool, a sender thread drains it, and
//! the main thread waits for SIGTERM (or idleness, when asked), then drains: the sources
//! read to their current end, sending kept up for the drain time, the rest left spooled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::Config;
use crate::collect::SourceReader;
use crate::send::Sender;
use crate::spool::Spool;

/// Sources are read at most this often while they grow.
const POLL: Duration = Duration::from_millis(500);
/// A batch failing this long is left to the next round of sending.
const GIVE_UP: Duration = Duration::from_secs(5);

/// Sleeps `period` unless `flag` is set first (checked every 50 ms).
fn wait(flag: &AtomicBool, period: Duration) {
    let until = Instant::now() + period;
    while !flag.load(Ordering::Relaxed) && Instant::now() < until {
        thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
    }
}

fn read_loop(
    mut reader: SourceReader,
    stopping: &AtomicBool,
    idle: &AtomicBool,
    drain: Duration,
) -> SourceReader {
    while !stopping.load(Ordering::Relaxed) {
        let started = Instant::now();
        match reader.run_once() {
            Ok(true) => {
                idle.store(true, Ordering::Relaxed);
                wait(stopping, POLL.saturating_sub(started.elapsed()));
                reader.relist();
            }
            Ok(false) => {
                idle.store(false, Ordering::Relaxed);
                if reader.spool_full().unwrap_or(true) {
                    wait(stopping, POLL);
                }
            }
            Err(e) => {
                log::error!("the spool cannot be written: {e}; reading waits");
                wait(stopping, POLL);
            }
        }
    }
    // Stopping (the attempt ended): take what the sources hold now, as far as the spool and
    // the drain time allow, so the last steps written are not left unread.
    let deadline = Instant::now() + drain;
    reader.relist();
    while Instant::now() < deadline && !reader.spool_full().unwrap_or(true) {
        if reader.run_once().unwrap_or(true) {
            break;
        }
    }
    reader
}

fn send_loop(mut sender: Sender, until: &AtomicBool) -> Sender {
    while !until.load(Ordering::Relaxed) {
        match sender.run_once(GIVE_UP, until) {
            Ok(0) => wait(until, Duration::from_millis(50)),
            Ok(_) => {}
            Err(e) => log::warn!("ingest unreachable, batches stay spooled: {}", e.0),
        }
    }
    sender
}

fn spool(config: &Config) -> Result<Spool, String> {
    Spool::open(&config.spool, &config.owner, &config.mountinfo).map_err(|e| e.0)
}

/// Runs the collector; the exit status (3 when batches are left undelivered).
pub fn collect(config: &Config) -> u8 {
    let opened = spool(config).and_then(|reading| {
        let sender = Sender::new(spool(config)?, &config.target, config.in_flight)?;
        Ok((reading, sender, spool(config)?))
    });
    let (reading, sender, status) = match opened {
        Ok(opened) => opened,
        Err(why) => {
            eprintln!("tuneplane-collector run: {why}");
            return 2;
        }
    };
    let reader = SourceReader::new(
        reading,
        config.sources.clone(),
        config.bounds,
        config.fence.clone(),
    );
    let (stopping, idle, send_stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&stopping)) {
            eprintln!("tuneplane-collector run: cannot handle signal {signal}: {e}");
            return 2;
        }
    }
    let drain = Duration::from_secs(config.drain_seconds);
    let reading = {
        let (stopping, idle) = (Arc::clone(&stopping), Arc::clone(&idle));
        thread::spawn(move || read_loop(reader, &stopping, &idle, drain))
    };
    let sending = {
        let until = Arc::clone(&send_stop);
        thread::spawn(move || send_loop(sender, &until))
    };
    let pending = || status.pending_count().unwrap_or(u64::MAX);
    while !stopping.load(Ordering::Relaxed) {
        if config.exit_when_idle && idle.load(Ordering::Relaxed) && pending() == 0 {
            stopping.store(true, Ordering::Relaxed);
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + drain;
    let reader = reading.join().ok();
    while pending() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    send_stop.store(true, Ordering::Relaxed);
    let sender = sending.join().ok();
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
    let counters = reader.map(|r| r.counters).unwrap_or_default();
    log::info!(
        "collector done: {} points and {} rich records read, {} points sent, {} refused, \
                {} problems, {} batches not delivered",
        counters.points,
        counters.rich,
        sender.map_or(0, |s| s.sent_points),
        counters.refused,
        counters.problems,
        left + quarantined.len() as u64
    );
    if left + quarantined.len() as u64 == 0 {
        0
    } else {
        3
    }
}
