use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use tonic::{Code, Status};

use super::{retrying, Clock};

const PATIENCE: Duration = Duration::from_secs(120);

/// A clock that moves only when a test's try takes time or the retry waits.
struct Simulated {
    start: Instant,
    elapsed: Cell<Duration>,
    tries: RefCell<Vec<Duration>>,
}

impl Simulated {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            elapsed: Cell::new(Duration::ZERO),
            tries: RefCell::new(Vec::new()),
        }
    }

    fn advance(&self, by: Duration) {
        self.elapsed.set(self.elapsed.get() + by);
    }

    /// Retries tries that each take `taking` and answer `answers` in turn (the last again
    /// once they run out), recording when each began.
    fn run(&self, patience: Duration, taking: Duration, answers: &[Code]) -> Result<(), Status> {
        let now = || self.start + self.elapsed.get();
        let sleep = |wait: Duration| self.advance(wait);
        let clock = Clock {
            now: &now,
            sleep: &sleep,
        };
        retrying(("Redeem", patience), 7, &clock, || {
            let mut tries = self.tries.borrow_mut();
            tries.push(self.elapsed.get());
            self.advance(taking);
            match answers[(tries.len() - 1).min(answers.len() - 1)] {
                Code::Ok => Ok(()),
                code => Err(Status::new(code, "control is restarting")),
            }
        })
    }

    fn tries(&self) -> Vec<Duration> {
        self.tries.borrow().clone()
    }
}

#[test]
fn the_time_tries_take_counts_toward_the_patience() {
    // Each try waits 50 s for its answer: the waits between them alone would let the
    // retries go on for ten minutes before they add up to 120 s.
    let clock = Simulated::new();
    let out = clock.run(PATIENCE, Duration::from_secs(50), &[Code::Unavailable]);
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    let tries = clock.tries();
    assert_eq!(tries.len(), 3, "tries began at {tries:?}");
    assert!(
        *tries.last().unwrap() < PATIENCE,
        "a try began past the patience: {tries:?}"
    );
    assert!(clock.elapsed.get() < PATIENCE + Duration::from_secs(50));
}

#[test]
fn the_last_wait_stops_at_the_patience_and_one_more_try_is_made_then() {
    let clock = Simulated::new();
    let patience = Duration::from_secs(10);
    let out = clock.run(patience, Duration::ZERO, &[Code::ResourceExhausted]);
    assert_eq!(out.unwrap_err().code(), Code::ResourceExhausted);
    let tries = clock.tries();
    assert!(tries.len() >= 4, "tries began at {tries:?}");
    assert_eq!(*tries.last().unwrap(), patience, "tries began at {tries:?}");
    assert_eq!(clock.elapsed.get(), patience);
}

#[test]
fn a_zero_patience_is_one_try() {
    let clock = Simulated::new();
    let out = clock.run(Duration::ZERO, Duration::from_secs(1), &[Code::Unavailable]);
    assert_eq!(out.unwrap_err().code(), Code::Unavailable);
    assert_eq!(clock.tries().len(), 1);
}

#[test]
fn a_final_answer_is_not_retried() {
    let clock = Simulated::new();
    let out = clock.run(
        PATIENCE,
        Duration::from_millis(20),
        &[Code::FailedPrecondition],
    );
    assert_eq!(out.unwrap_err().code(), Code::FailedPrecondition);
    assert_eq!(clock.tries().len(), 1);
}

#[test]
fn a_call_answered_after_transient_refusals_succeeds() {
    let clock = Simulated::new();
    let answers = [Code::Unavailable, Code::Aborted, Code::Ok];
    clock
        .run(PATIENCE, Duration::from_secs(1), &answers)
        .unwrap();
    let tries = clock.tries();
    assert_eq!(tries.len(), 3, "tries began at {tries:?}");
    assert!(tries
        .windows(2)
        .all(|w| w[1] > w[0] + Duration::from_secs(1)));
}
