//! An earlier file of a path (renamed away or deleted) read as far as it can be: to its end,
//! or to an unfinished line or record, which its writer may yet end, or to where reading it
//! fails. logrotate's `create` leaves a writer appending to the renamed file until it opens
//! the path again, so even a file read to its end is waited for (Fluent Bit's `Rotate_Wait`)
//! before the file the path names now is read. Each waits `TAIL_WAIT` without being read again
//! and again; a file that grows is read, and waited for anew. Past that, or at once when the
//! collector drains at the attempt's end, a rest is left unread and said with why, and the
//! file the path names now is read: one writer killed mid-line, or one failing disk block,
//! must not keep the collector from a new file for good.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long an unfinished tail that does not grow is waited for (Fluent Bit's
/// `Rotate_Wait` is 5 s too).
pub const TAIL_WAIT: Duration = Duration::from_secs(5);

/// A (source, file) name, as `SourceReader::held` keys it.
type Name = (String, String);

struct Tail {
    key: String,
    length: u64,
    since: Instant,
    why: String,
}

impl Tail {
    /// Whether this is the tail of file `key` while it is `length` bytes long.
    fn is(&self, key: &str, length: u64) -> bool {
        self.key == key && self.length == length
    }
}

/// What a file read to its end was waited for (it leaves no rest unread).
pub fn rotated() -> String {
    "its writer appended nothing more".to_owned()
}

/// Why a rest is left unread when its writer never ended it.
pub fn unended() -> String {
    format!(
        "an unfinished line or record its writer did not end within {}s",
        TAIL_WAIT.as_secs()
    )
}

#[derive(Default)]
pub struct Unfinished {
    tails: HashMap<Name, Tail>,
    draining: bool,
}

impl Unfinished {
    /// A step could read nothing more of `name`'s earlier file (`key`, now `length` bytes),
    /// for `why`: whether the wait is over. A file that grew waits anew.
    pub fn seen(&mut self, name: &Name, key: &str, length: u64, why: String) -> bool {
        if !self.tails.get(name).is_some_and(|t| t.is(key, length)) {
            let since = Instant::now();
            let key = key.to_owned();
            self.tails.insert(
                name.clone(),
                Tail {
                    key,
                    length,
                    since,
                    why,
                },
            );
        }
        self.over(name)
    }

    /// Why `name`'s earlier file (`key`, `length` bytes) is given up, if it is: its rest was
    /// seen unreadable, it is unchanged since, and the wait is over. Then it is forgotten.
    pub fn given_up(&mut self, name: &Name, key: &str, length: u64) -> Option<String> {
        let seen = self.tails.get(name);
        if !(seen.is_some_and(|t| t.is(key, length)) && self.over(name)) {
            return None;
        }
        self.tails.remove(name).map(|t| t.why)
    }

    /// `name`'s earlier file was read on: what was waited for came.
    pub fn forget(&mut self, name: &Name) {
        self.tails.remove(name);
    }

    /// The collector drains (the attempt ended): no tail is waited for any longer.
    pub fn drain(&mut self) {
        self.draining = true;
    }

    fn over(&self, name: &Name) -> bool {
        self.draining
            || self
                .tails
                .get(name)
                .is_some_and(|t| t.since.elapsed() >= TAIL_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> Name {
        ("m".into(), String::new())
    }

    #[test]
    fn a_tail_is_waited_for_then_given_up_and_one_that_grows_waits_anew() {
        let mut tails = Unfinished::default();
        assert!(!tails.seen(&name(), "1:2", 100, unended()));
        assert_eq!(tails.given_up(&name(), "1:2", 100), None);
        tails.tails.get_mut(&name()).unwrap().since -= TAIL_WAIT; // as if waited
        assert_eq!(tails.given_up(&name(), "1:2", 120), None); // it grew since: not this tail
        assert!(!tails.seen(&name(), "1:2", 120, "EIO".into())); // waited for anew
        tails.tails.get_mut(&name()).unwrap().since -= TAIL_WAIT;
        assert!(tails.seen(&name(), "1:2", 120, "EIO".into()));
        assert_eq!(tails.given_up(&name(), "9:9", 120), None); // another file
        assert_eq!(tails.given_up(&name(), "1:2", 120).as_deref(), Some("EIO"));
        assert_eq!(tails.given_up(&name(), "1:2", 120), None); // forgotten once given up
    }

    #[test]
    fn draining_waits_for_no_tail() {
        let mut tails = Unfinished::default();
        tails.drain();
        assert!(tails.seen(&name(), "1:2", 100, unended()));
        assert_eq!(tails.given_up(&name(), "1:2", 100), Some(unended()));
    }

    #[test]
    fn a_tail_read_on_is_forgotten() {
        let mut tails = Unfinished::default();
        tails.drain();
        tails.seen(&name(), "1:2", 100, unended());
        tails.forget(&name());
        assert_eq!(tails.given_up(&name(), "1:2", 100), None);
    }
}
