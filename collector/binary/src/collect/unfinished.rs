//! An earlier file of a path (renamed away or deleted) that ends in an unfinished line or
//! record: its writer may yet end it (logrotate's `create` leaves a writer appending to the
//! renamed file until it reopens), so its tail is waited for `TAIL_WAIT` without reading it
//! again and again. Past that, or at once when the collector drains at the attempt's end,
//! the tail is left unread and said, and the file the path names now is read: one writer
//! killed mid-line must not keep the collector from a new file for good.

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
}

#[derive(Default)]
pub struct Unfinished {
    tails: HashMap<Name, Tail>,
    draining: bool,
}

impl Unfinished {
    /// A step found nothing but an unfinished tail in `name`'s earlier file (`key`, now
    /// `length` bytes): whether the wait for its end is over. A tail that grew waits anew.
    pub fn seen(&mut self, name: &Name, key: &str, length: u64) -> bool {
        let same = |t: &Tail| t.key == key && t.length == length;
        if !self.tails.get(name).is_some_and(same) {
            let since = Instant::now();
            let key = key.to_owned();
            self.tails.insert(name.clone(), Tail { key, length, since });
        }
        self.over(name)
    }

    /// Whether `name`'s earlier file (`key`, `length` bytes) is given up: its tail was seen
    /// unfinished, unchanged since, and the wait is over. Once given up, it is forgotten.
    pub fn given_up(&mut self, name: &Name, key: &str, length: u64) -> bool {
        let seen = self.tails.get(name);
        let up = seen.is_some_and(|t| t.key == key && t.length == length) && self.over(name);
        if up {
            self.tails.remove(name);
        }
        up
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
        assert!(!tails.seen(&name(), "1:2", 100));
        assert!(!tails.given_up(&name(), "1:2", 100));
        tails.tails.get_mut(&name()).unwrap().since -= TAIL_WAIT; // as if waited
        assert!(!tails.given_up(&name(), "1:2", 120)); // it grew since: not this tail
        assert!(!tails.seen(&name(), "1:2", 120)); // waited for anew
        tails.tails.get_mut(&name()).unwrap().since -= TAIL_WAIT;
        assert!(tails.seen(&name(), "1:2", 120));
        assert!(!tails.given_up(&name(), "9:9", 120)); // another file
        assert!(tails.given_up(&name(), "1:2", 120));
        assert!(!tails.given_up(&name(), "1:2", 120)); // forgotten once given up
    }

    #[test]
    fn draining_waits_for_no_tail() {
        let mut tails = Unfinished::default();
        tails.drain();
        assert!(tails.seen(&name(), "1:2", 100));
        assert!(tails.given_up(&name(), "1:2", 100));
    }

    #[test]
    fn a_tail_read_on_is_forgotten() {
        let mut tails = Unfinished::default();
        tails.drain();
        tails.seen(&name(), "1:2", 100);
        tails.forget(&name());
        assert!(!tails.given_up(&name(), "1:2", 100));
    }
}
