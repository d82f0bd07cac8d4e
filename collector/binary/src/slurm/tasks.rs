//! The training tasks of a job on this node, which a collector outlives.
//!
//! When Slurm ends a job (scancel, time limit, preemption) it signals the collectors and the
//! training tasks at once; a collector that read its sources to the end at once could miss
//! the last lines a task wrote in the moment before the signal reached it. So on SIGTERM the
//! collector first waits, a bounded while, until no task of its job runs on the node: the
//! processes of its user whose environment names a member (`TUNEPLANE_MEMBER`, which the job
//! script sets for each task) of its job (`SLURM_JOB_ID`). A task's children inherit both.
//! Processes whose environment cannot be read (undumpable, as the collectors are; gone) and
//! zombies (an empty environment) are not tasks.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::run::{ended_by, Flag, Flags};

/// How long a collector waits for the tasks to end before it reads to the end regardless:
/// the rest of Slurm's KillWait is the drain's.
pub const TASKS_GRACE: Duration = Duration::from_secs(10);

fn is_task(environ: &[u8], job_id: &str) -> bool {
    let job = format!("SLURM_JOB_ID={job_id}");
    let mut variables = environ.split(|b| *b == 0);
    let (mut of_job, mut member) = (false, false);
    for variable in variables.by_ref() {
        of_job |= variable == job.as_bytes();
        member |= variable.starts_with(b"TUNEPLANE_MEMBER=");
    }
    of_job && member
}

/// The pids of the job's training tasks (and their children) on this node.
pub fn training_tasks(job_id: &str, proc: &Path) -> Vec<u32> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut found: Vec<u32> = entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            if entry.metadata().ok()?.uid() != me {
                return None;
            }
            let environ = std::fs::read(entry.path().join("environ")).ok()?; // exited, or not ours
            is_task(&environ, job_id).then_some(pid)
        })
        .collect();
    found.sort_unstable();
    found
}

/// Wait until no training task of the job runs here, at most `grace`; the tasks still
/// running then (none once they all ended).
pub fn wait_until_ended(job_id: &str, grace: Duration, proc: &Path) -> Vec<u32> {
    let deadline = Instant::now() + grace;
    loop {
        let left = training_tasks(job_id, proc);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The collectors started so far; once `ending` is past, each is stopped as it starts.
#[derive(Default)]
pub struct Stops {
    flags: Mutex<Vec<Arc<Flags>>>,
    pub stopping: Flag,
}

impl Stops {
    pub fn add(&self, flags: Arc<Flags>) {
        let mut all = self
            .flags
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.stopping.is_set() {
            flags.stop();
        }
        all.push(flags);
    }

    fn stop_all(&self) {
        let all = self
            .flags
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.stopping.set();
        for flags in all.iter() {
            flags.stop();
        }
    }
}

/// Once told to end (SIGTERM, SIGINT), and once the job's tasks here have ended, stop the
/// collectors: each reads to the end and drains. From the start: a SIGTERM before the
/// collectors start stops each as it starts.
pub fn end_after_the_tasks(job_id: String) -> Result<Arc<Stops>, String> {
    let stops = Arc::new(Stops::default());
    let mut signals =
        Signals::new([SIGTERM, SIGINT]).map_err(|e| format!("cannot handle signals: {e}"))?;
    let ender = Arc::clone(&stops);
    thread::spawn(move || {
        if signals.forever().next().is_none() {
            return;
        }
        // The scan in a thread of its own: a hung /proc read must not keep the drain.
        let scan =
            thread::spawn(move || wait_until_ended(&job_id, TASKS_GRACE, Path::new("/proc")));
        let left = ended_by(scan, Instant::now() + TASKS_GRACE + Duration::from_secs(1));
        if left.as_ref().is_none_or(|l| !l.is_empty()) {
            log::warn!(
                "training tasks {} still run {} s after the job's end began; reading to the \
                 end of the sources regardless",
                left.map_or("(?)".into(), |l| format!("{l:?}")),
                TASKS_GRACE.as_secs()
            );
        }
        ender.stop_all();
    });
    Ok(stops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_of_the_job_and_names_a_member() {
        assert!(is_task(
            b"A=1\0SLURM_JOB_ID=7\0TUNEPLANE_MEMBER=rank-0\0",
            "7"
        ));
        assert!(!is_task(b"SLURM_JOB_ID=7\0", "7"));
        assert!(!is_task(b"SLURM_JOB_ID=70\0TUNEPLANE_MEMBER=rank-0\0", "7"));
        assert!(!is_task(b"", "7"));
    }

    #[test]
    fn this_process_is_found_when_its_environment_says_so() {
        let place = std::env::temp_dir().join(format!("tasks-{}", std::process::id()));
        let me = place.join(std::process::id().to_string());
        std::fs::create_dir_all(&me).unwrap();
        std::fs::write(
            me.join("environ"),
            b"SLURM_JOB_ID=9\0TUNEPLANE_MEMBER=rank-1\0",
        )
        .unwrap();
        std::fs::create_dir_all(place.join("self")).unwrap();
        assert_eq!(training_tasks("9", &place), vec![std::process::id()]);
        assert!(training_tasks("8", &place).is_empty());
        assert!(wait_until_ended("8", Duration::ZERO, &place).is_empty());
        std::fs::remove_dir_all(&place).unwrap();
    }
}
