//! A flag threads wait for without polling: set once (stop reading, stop sending) or rung
//! again and again (a batch was sealed), each waiter woken at once by a condition variable
//! rather than looking every few milliseconds: a collector following a quiet file sleeps.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

#[derive(Default)]
pub struct Flag {
    set: Mutex<bool>,
    changed: Condvar,
}

impl Flag {
    /// Sets the flag and wakes every waiter.
    pub fn set(&self) {
        *self.set.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.changed.notify_all();
    }

    pub fn is_set(&self) -> bool {
        *self.set.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `timeout` for the flag; whether it is set.
    pub fn wait(&self, timeout: Duration) -> bool {
        let set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        let (set, _) = self
            .changed
            .wait_timeout_while(set, timeout, |set| !*set)
            .unwrap_or_else(PoisonError::into_inner);
        *set
    }

    /// Waits up to `timeout` for the flag and clears it (a doorbell); whether it was rung.
    pub fn take(&self, timeout: Duration) -> bool {
        let set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut set, _) = self
            .changed
            .wait_timeout_while(set, timeout, |set| !*set)
            .unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_waiter_wakes_when_the_flag_is_set_and_a_doorbell_clears() {
        let flag = Arc::new(Flag::default());
        assert!(!flag.wait(Duration::from_millis(1)));
        let setter = Arc::clone(&flag);
        let thread = std::thread::spawn(move || setter.set());
        assert!(flag.wait(Duration::from_secs(60)));
        thread.join().unwrap();
        assert!(flag.take(Duration::ZERO));
        assert!(!flag.take(Duration::ZERO));
    }
}
