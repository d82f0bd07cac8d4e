//! A running collector's figures for node_exporter's textfile collector: the spool's and what
//! was sealed and sent, in Prometheus's text format, in `<dir>/tuneplane-collector-<hash of
//! run/attempt/member>.prom`, replaced whole (a file of another name renamed over it) at
//! most every `EVERY` and at the end. A clean end with everything delivered removes it; one
//! left behind keeps its last `tuneplane_collector_textfile_timestamp_seconds`, so an alert
//! sees that its collector stopped. The file is for watching, never in the way: a write that
//! fails is said once and collection goes on.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::collect::Counters;
use crate::spool::{Holding, MemberKey};

/// How often the file is written while the collector runs.
pub const EVERY: Duration = Duration::from_secs(15);

/// What this collector's reader and sender have done so far, shared with the thread that
/// writes the file.
#[derive(Default)]
pub struct Tally {
    batches_sealed: AtomicU64,
    points_sealed: AtomicU64,
    records_refused: AtomicU64,
    batches_sent: AtomicU64,
    points_sent: AtomicU64,
    /// When ingest last ACKed a batch (an f64's bits; 0: never).
    last_ack: AtomicU64,
}

impl Tally {
    /// The reader's counters as they are now.
    pub fn read(&self, counters: &Counters) {
        self.batches_sealed.store(counters.batches, Relaxed);
        self.points_sealed.store(counters.points, Relaxed);
        self.records_refused.store(counters.refused, Relaxed);
    }

    /// Ingest ACKed a batch of `points` at `now`.
    pub fn acked(&self, points: u64, now: f64) {
        self.batches_sent.fetch_add(1, Relaxed);
        self.points_sent.fetch_add(points, Relaxed);
        self.last_ack.store(now.to_bits(), Relaxed);
    }
}

/// Every figure of the file, one a line in the order written: its name after
/// `tuneplane_collector_`, and its help. Those named `_total` are counters, the others gauges.
/// (One text, not a table of strings: each string of a table is a relocation of its own in a
/// static binary.)
pub const FIGURES: &str = "\
    spool_bytes Payload bytes in the spool (what its cap counts).\n\
    spool_limit_bytes The spool's cap.\n\
    spool_batches Batches waiting for ingest.\n\
    spool_points Points waiting for ingest.\n\
    quarantined_batches Batches ingest refused for good.\n\
    spool_filesystem_free_bytes Free bytes on the spool's filesystem.\n\
    batches_sealed_total Batches sealed.\n\
    points_sealed_total Points sealed.\n\
    records_refused_total Records refused (spool status says why).\n\
    batches_sent_total Batches ingest ACKed.\n\
    points_sent_total Points ingest ACKed.\n\
    last_ack_timestamp_seconds When ingest last ACKed a batch.\n\
    textfile_timestamp_seconds When this file was written.\n\
";

/// How many figures there are (the lines of `FIGURES`).
const COUNT: usize = 13;

/// A value for each of `FIGURES`, None for one left out.
pub type Values = [Option<f64>; COUNT];

/// What is written at `at` (seconds since the epoch): what the spool holds (left out if it
/// could not be asked), its cap, its filesystem's free room (if known), the tally (the last
/// ACK's time once there was one) and `at`.
pub fn values(
    held: Option<Holding>,
    limit: u64,
    free: Option<u64>,
    tally: &Tally,
    at: f64,
) -> Values {
    let count = |n: u64| Some(n as f64);
    let load = |n: &AtomicU64| count(n.load(Relaxed));
    let last_ack = f64::from_bits(tally.last_ack.load(Relaxed));
    [
        held.and_then(|h| count(h.bytes)),
        count(limit),
        held.and_then(|h| count(h.batches)),
        held.and_then(|h| count(h.points)),
        held.and_then(|h| count(h.quarantined)),
        free.and_then(count),
        load(&tally.batches_sealed),
        load(&tally.points_sealed),
        load(&tally.records_refused),
        load(&tally.batches_sent),
        load(&tally.points_sent),
        Some(last_ack).filter(|t| *t > 0.0),
        Some(at),
    ]
}

/// A label value as the text format writes it: backslash, double quote and newline escaped.
pub fn label_value(value: &str) -> String {
    let mut escaped = Vec::with_capacity(value.len());
    for &b in value.as_bytes() {
        match b {
            b'\\' => escaped.extend_from_slice(b"\\\\"),
            b'"' => escaped.extend_from_slice(b"\\\""),
            b'\n' => escaped.extend_from_slice(b"\\n"),
            b => escaped.push(b),
        }
    }
    String::from_utf8(escaped).unwrap_or_default() // only ASCII was put between characters
}

/// The labels of `owner`'s figures: run, attempt and member.
pub fn labels(owner: &MemberKey) -> String {
    format!(
        "{{run=\"{}\",attempt=\"{}\",member=\"{}\"}}",
        label_value(&owner.run_id),
        owner.attempt,
        label_value(&owner.member)
    )
}

/// `values` with their `labels` in Prometheus's text exposition format.
pub fn exposition(labels: &str, values: &Values) -> String {
    let mut text = String::new();
    for (line, value) in FIGURES.lines().zip(values) {
        let (name, help) = line.split_once(' ').unwrap_or_default();
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        // A family is named as its sample, a counter's `_total` included (as the text format
        // has it; OpenMetrics, not read here, would leave it out).
        if let Some(value) = value {
            let _ = write!(
                text,
                "# HELP tuneplane_collector_{name} {help}\n# TYPE tuneplane_collector_{name} \
                 {kind}\ntuneplane_collector_{name}{labels} {value}\n"
            );
        }
    }
    text
}

/// Writes `text` to `path` whole: into a file of its own beside it (its name not ending in
/// `.prom`, so node_exporter never reads it half written), renamed over `path`. The
/// directory may be shared with other users' collectors: what is at the temporary name is
/// removed and the file made anew (O_EXCL: nothing another user left there, a FIFO whose
/// open would block or a file of theirs, is ever opened; one that cannot be removed fails
/// the write), never through a link, readable by node_exporter whatever the umask.
pub fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let _ = std::fs::remove_file(&temporary);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&temporary)
        .and_then(|mut file| {
            // SAFETY: fchmod on a descriptor this function owns, open for its whole call.
            if unsafe { libc::fchmod(std::os::fd::AsRawFd::as_raw_fd(&file), 0o644) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            file.write_all(text.as_bytes())
        })
        .and_then(|()| std::fs::rename(&temporary, path))
}

/// The file of one member's collector, written when due.
pub struct Textfile {
    pub path: PathBuf,
    labels: String,
    due: Instant,
    /// A write failed, and it was said (once: the file is for watching, not to be in the way).
    warned: bool,
}

impl Textfile {
    /// `owner`'s file in `directory`, due at once.
    pub fn new(directory: &Path, owner: &MemberKey) -> Self {
        // FNV-1a: a name of the member's own, the same at every start and in every version.
        let hash = (owner.to_string().bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        Self {
            path: directory.join(format!("tuneplane-collector-{hash:016x}.prom")),
            labels: labels(owner),
            due: Instant::now(),
            warned: false,
        }
    }

    /// Writes the values `look` gives if the file is due at `now`; how long until it is due
    /// again.
    pub fn write_if_due(&mut self, now: Instant, look: impl FnOnce() -> Values) -> Duration {
        if now >= self.due {
            self.write(&look());
            self.due = now + EVERY;
        }
        self.due.saturating_duration_since(now)
    }

    pub fn write(&mut self, values: &Values) {
        let written = replace(&self.path, &exposition(&self.labels, values));
        self.said("write", written);
    }

    /// The file removed (a clean end: nothing left to watch).
    pub fn remove(&mut self) {
        let removed = std::fs::remove_file(&self.path);
        self.said(
            "remove",
            removed.or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            }),
        );
    }

    /// A failure to `what` the file said, the first only.
    fn said(&mut self, what: &str, done: std::io::Result<()>) {
        if let Err(e) = done {
            if !std::mem::replace(&mut self.warned, true) {
                log::warn!(
                    "cannot {what} the metrics textfile {} ({e}); collecting goes on",
                    self.path.display()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(run_id: &str, member: &str) -> MemberKey {
        MemberKey {
            run_id: run_id.into(),
            attempt: 2,
            member: member.into(),
        }
    }

    #[test]
    fn label_values_escape_backslash_quote_and_newline() {
        assert_eq!(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(label_value("rank-0 é"), "rank-0 é");
        assert_eq!(
            labels(&owner("r\"1", "rank\n0")),
            r#"{run="r\"1",attempt="2",member="rank\n0"}"#
        );
    }

    #[test]
    fn every_figure_has_a_name_and_help() {
        assert_eq!(FIGURES.lines().count(), COUNT);
        for line in FIGURES.lines() {
            let (name, help) = line.split_once(' ').unwrap();
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{line}"
            );
            assert!(
                help.ends_with('.') && !help.contains(['\\', '\n']),
                "{line}"
            );
        }
    }

    #[test]
    fn each_figure_is_a_family_of_its_own_with_its_help_type_and_labels() {
        let tally = Tally::default();
        tally.acked(7, 12.5);
        let held = Holding {
            batches: 3,
            points: 30,
            quarantined: 1,
            bytes: 4096,
        };
        let text = exposition(
            "{m=\"1\"}",
            &values(Some(held), 1 << 20, None, &tally, 99.25),
        );
        for line in [
            "# HELP tuneplane_collector_spool_bytes Payload bytes in the spool (what its",
            "# TYPE tuneplane_collector_spool_bytes gauge\n",
            "\ntuneplane_collector_spool_bytes{m=\"1\"} 4096\n",
            "\ntuneplane_collector_spool_batches{m=\"1\"} 3\n",
            "\ntuneplane_collector_spool_points{m=\"1\"} 30\n",
            "\ntuneplane_collector_quarantined_batches{m=\"1\"} 1\n",
            "\ntuneplane_collector_spool_limit_bytes{m=\"1\"} 1048576\n",
            "# TYPE tuneplane_collector_batches_sent_total counter\n",
            "\ntuneplane_collector_batches_sent_total{m=\"1\"} 1\n",
            "\ntuneplane_collector_points_sent_total{m=\"1\"} 7\n",
            "\ntuneplane_collector_last_ack_timestamp_seconds{m=\"1\"} 12.5\n",
            "\ntuneplane_collector_textfile_timestamp_seconds{m=\"1\"} 99.25\n",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
        assert_eq!(text.lines().count(), 3 * (COUNT - 1), "{text}");
        assert!(!text.contains("free_bytes"), "{text}");
        // Without a look at the spool, or an ACK yet, those figures are left out.
        let text = exposition("", &values(None, 1, Some(5), &Tally::default(), 1.0));
        assert!(
            !text.contains("spool_bytes ") && !text.contains("last_ack"),
            "{text}"
        );
        assert!(text.contains("\ntuneplane_collector_spool_filesystem_free_bytes 5\n"));
    }

    #[test]
    fn the_file_is_replaced_whole_and_named_by_its_member() {
        let directory = std::env::temp_dir().join(format!("tp-textfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir(&directory).unwrap();
        let mut file = Textfile::new(&directory, &owner("r", "rank-0"));
        let name = file.path.file_name().unwrap().to_str().unwrap().to_owned();
        assert_eq!(name, "tuneplane-collector-bb8fe7eede802886.prom"); // FNV-1a of r/2/rank-0
        assert_ne!(
            file.path,
            Textfile::new(&directory, &owner("r", "rank-1")).path
        );
        // What another user may leave in a shared directory is never opened: a FIFO (an
        // open of it would block the collector) where the file is written first.
        let fifo = directory.join(format!("{name}.tmp"));
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
        let (now, tally) = (Instant::now(), Tally::default());
        let look = |at| values(None, 1, None, &tally, at);
        assert_eq!(file.write_if_due(now, || look(1.0)), EVERY);
        assert!(file.write_if_due(now + EVERY / 2, || unreachable!()) < EVERY);
        file.write_if_due(now + EVERY, || look(2.0));
        let listed: Vec<_> = (std::fs::read_dir(&directory).unwrap())
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(listed, [std::ffi::OsString::from(&name)]); // the FIFO removed, unopened
        let mode = std::fs::metadata(&file.path).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o644
        );
        let text = std::fs::read_to_string(&file.path).unwrap();
        assert!(
            text.ends_with(
                "_textfile_timestamp_seconds{run=\"r\",attempt=\"2\",member=\"rank-0\"} 2\n"
            ),
            "{text}"
        );
        file.remove();
        file.remove(); // gone already: nothing to say
        assert!(!file.warned);
        assert_eq!(std::fs::read_dir(&directory).unwrap().count(), 0);
        // A link put where the file goes is replaced, never written through.
        let elsewhere = directory.join("elsewhere");
        std::fs::write(&elsewhere, "kept").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file.path).unwrap();
        file.write(&look(4.0));
        assert!(!file.warned && !file.path.is_symlink());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "kept");
        std::fs::remove_file(&elsewhere).unwrap();
        file.remove();
        // A directory that is not there fails the write, said once; collection goes on.
        let mut missing = Textfile::new(&directory.join("missing"), &owner("r", "rank-0"));
        missing.write(&look(3.0));
        assert!(missing.warned);
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
