//! Following sources without looking at them again and again: the reader sleeps until the
//! directory of a source changes (inotify), and looks on its own only rarely.
//!
//! A JSONL file's directory is watched for that file's name; a TensorBoard log directory
//! and every directory its event files are in, for any name (a new run directory is watched
//! as soon as it is made). Polling stays where inotify cannot see: a source on a network
//! filesystem (a write on another host raises no event here), one whose directory does not
//! exist yet or cannot be watched, or a host whose inotify limits are spent; there the reader
//! looks every `POLL` as before. Elsewhere it looks every `SAFETY` all the same, so an event
//! lost (the queue overflowed) delays reading, never stops it.

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use crate::spool::mounts::network_filesystem_of;

mod watched;

use watched::{add, mask, Watches};
pub use watched::{watches_of, Watch};

/// How often sources are looked at where no event says they changed.
pub const POLL: Duration = Duration::from_millis(500);
/// After a ring, events are let gather this long before they are read: as long as the
/// reader's round (`run::collector::ROUND`: it reads at most once a round while a source
/// grows), so a job appending ten times a second wakes this thread and the reader once a
/// round each, not on every write. A quiet source's first write still rings at once.
const GATHER: Duration = Duration::from_secs(1);
/// How often watched sources are looked at all the same.
pub const SAFETY: Duration = Duration::from_secs(10);
/// Directories one collector watches at most: watches count against the collector user's
/// `fs.inotify.max_user_watches`, which every collector of the node shares, and a training
/// job decides how many run directories it makes. Past it, the sources are polled.
pub const MAX_WATCHES: usize = 1024;

/// The reader's watches, and the thread that rings `changed` on their events.
pub struct Follower {
    inotify: Option<Arc<Inotify>>,
    watches: Arc<Mutex<Watches>>,
    /// Written (or closed) to end the thread.
    stop: Option<OwnedFd>,
    /// The mount table sources are judged from.
    mountinfo: String,
    /// Whether a source is looked at by polling (network, unwatchable, no inotify).
    polled: bool,
    said: HashSet<PathBuf>,
}

impl Follower {
    /// Watching, or polling only when inotify is not to be had (said once).
    pub fn start(mountinfo: String, changed: impl Fn() + Send + 'static) -> Self {
        let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)
            .map_err(|e| e.to_string());
        Self::with(inotify, mountinfo, changed)
    }

    /// `start` with the inotify instance made (or why none could be: the host's limit of
    /// instances spent, say).
    fn with(
        inotify: Result<Inotify, String>,
        mountinfo: String,
        changed: impl Fn() + Send + 'static,
    ) -> Self {
        let watches = Arc::new(Mutex::new(Watches::default()));
        let started = inotify.and_then(|inotify| {
            let (wake, stop) = nix::unistd::pipe().map_err(|e| e.to_string())?;
            let inotify = Arc::new(inotify);
            let (events, known) = (Arc::clone(&inotify), Arc::clone(&watches));
            std::thread::Builder::new()
                .name("follow".into())
                .spawn(move || watch_events(&events, &known, &wake, &changed))
                .map_err(|e| e.to_string())?;
            Ok((inotify, stop))
        });
        match started {
            Ok((inotify, stop)) => Self {
                inotify: Some(inotify),
                watches,
                stop: Some(stop),
                mountinfo,
                polled: false,
                said: HashSet::new(),
            },
            Err(why) => {
                log::warn!("sources are polled every {POLL:?}: no inotify ({why})");
                Self {
                    inotify: None,
                    watches,
                    stop: None,
                    mountinfo,
                    polled: true,
                    said: HashSet::new(),
                }
            }
        }
    }

    /// Watches what is not watched yet of `wanted`; whether every one of them is watched.
    pub fn watch(&mut self, wanted: &[Watch]) {
        let Some(inotify) = &self.inotify else {
            return;
        };
        let mut polled = false;
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        for want in wanted {
            if watches.directories.contains_key(&want.directory) {
                // Another source of a directory watched already: its names join the watch.
                watches.widen(want);
                continue;
            }
            if !watches.room() {
                polled = true;
                continue;
            }
            if let Some(network) = network_filesystem_of(&want.directory, &self.mountinfo) {
                if self.said.insert(want.directory.clone()) {
                    log::info!(
                        "{} is on {network}: polled every {POLL:?} (its writes on other hosts \
                         raise no event here)",
                        want.directory.display()
                    );
                }
                polled = true;
                continue;
            }
            match inotify.add_watch(&want.directory, mask()) {
                Ok(descriptor) => add(&mut watches, descriptor, want.clone()),
                Err(e) => {
                    if e != nix::errno::Errno::ENOENT && self.said.insert(want.directory.clone()) {
                        log::info!(
                            "{} cannot be watched ({e}): polled every {POLL:?}",
                            want.directory.display()
                        );
                    }
                    polled = true;
                }
            }
        }
        self.polled = polled;
    }

    /// How long the reader may sleep when no event wakes it.
    pub fn patience(&self) -> Duration {
        let full = self
            .watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .full;
        if self.polled || full || self.inotify.is_none() {
            POLL
        } else {
            SAFETY
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        // Closing the pipe's write end wakes the thread, which then ends.
        drop(self.stop.take());
    }
}

/// The thread: rings `changed` for each batch of events that concern a source, until the
/// pipe `wake` is closed.
fn watch_events(inotify: &Inotify, watches: &Mutex<Watches>, wake: &OwnedFd, changed: &dyn Fn()) {
    loop {
        let mut fds = [
            PollFd::new(inotify.as_fd(), PollFlags::POLLIN),
            PollFd::new(wake.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                log::warn!(
                    "inotify cannot be waited on ({e}); sources are looked at every {SAFETY:?}"
                );
                return;
            }
            Ok(_) => {}
        }
        if fds[1].any().unwrap_or(true) {
            return; // the follower is gone
        }
        let Ok(events) = inotify.read_events() else {
            continue;
        };
        let mut ring = false;
        let mut watches = watches.lock().unwrap_or_else(PoisonError::into_inner);
        for event in events {
            if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                ring = true; // events were lost: look at everything
                continue;
            }
            if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                // Its directory went: watched again once it is back (the reader asks).
                if let Some(gone) = watches.by_descriptor.remove(&event.wd) {
                    watches.directories.remove(&gone.directory);
                }
                ring = true;
                continue;
            }
            let Some(watch) = watches.by_descriptor.get(&event.wd).cloned() else {
                continue;
            };
            let name = event.name.unwrap_or_default();
            if watch.recursive && event.mask.contains(AddWatchFlags::IN_ISDIR) && watches.room() {
                let directory = watch.directory.join(&name);
                if let Ok(descriptor) = inotify.add_watch(&directory, mask()) {
                    let sub = Watch {
                        directory,
                        names: None,
                        recursive: true,
                    };
                    add(&mut watches, descriptor, sub);
                }
            }
            ring |= watch.concerns(&name);
        }
        drop(watches);
        if ring {
            changed();
            // The events of the next GATHER wait in the inotify queue (a queue that
            // overflows says so, and rings); the pipe still ends the thread at once.
            let mut fds = [PollFd::new(wake.as_fd(), PollFlags::POLLIN)];
            let gather = PollTimeout::try_from(GATHER).unwrap_or(PollTimeout::NONE);
            if matches!(poll(&mut fds, gather), Ok(n) if n > 0) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
