use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::*;

const LOCAL: &str = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n";

fn place(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("tp-follow-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).unwrap();
    fs::canonicalize(path).unwrap()
}

/// A follower of `mountinfo` and how many times it has rung.
fn started(mountinfo: &str) -> (Follower, Arc<AtomicUsize>) {
    let rung = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&rung);
    let follower = Follower::start(mountinfo.to_owned(), move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    (follower, rung)
}

/// Waits (a bounded while) for the ring count to pass `from`; whether it did.
fn rings_after(rung: &AtomicUsize, from: usize, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if rung.load(Ordering::SeqCst) > from {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn a_write_to_the_source_rings_and_one_to_another_file_is_not_the_sources() {
    let directory = place("file");
    let source = directory.join("metrics.jsonl");
    let (mut follower, rung) = started(LOCAL);
    let watches = watches_of(&source, false, &[]);
    follower.watch(&watches);
    assert_eq!(follower.patience(), SAFETY);
    fs::write(&source, b"{}\n").unwrap();
    assert!(rings_after(&rung, 0, Duration::from_secs(10)));
    assert!(watches[0].concerns(&"metrics.jsonl".into()));
    assert!(!watches[0].concerns(&"checkpoint.pt".into()));
    fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn a_second_source_of_a_watched_directory_rings_when_it_is_made() {
    let directory = place("two");
    let (first, second) = (directory.join("a.jsonl"), directory.join("b.jsonl"));
    let (mut follower, rung) = started(LOCAL);
    let wanted: Vec<Watch> = [&first, &second]
        .into_iter()
        .flat_map(|source| watches_of(source, false, &[]))
        .collect();
    follower.watch(&wanted);
    assert_eq!(follower.patience(), SAFETY);
    fs::write(&second, b"{}\n").unwrap();
    assert!(rings_after(&rung, 0, Duration::from_secs(5)));
    fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn a_new_run_directory_of_a_log_directory_is_watched_at_once() {
    let logdir = place("logdir");
    let (mut follower, rung) = started(LOCAL);
    follower.watch(&watches_of(&logdir, true, &[]));
    fs::create_dir(logdir.join("run-1")).unwrap();
    assert!(rings_after(&rung, 0, Duration::from_secs(10)));
    let before = rung.load(Ordering::SeqCst);
    fs::write(logdir.join("run-1/events.out.tfevents.1.host"), b"x").unwrap();
    assert!(
        rings_after(&rung, before, Duration::from_secs(10)),
        "a write in the new run"
    );
    fs::remove_dir_all(&logdir).unwrap();
}

#[test]
fn a_missing_or_network_directory_is_polled() {
    let directory = place("polled");
    let (mut follower, _) = started(LOCAL);
    follower.watch(&watches_of(&directory.join("later/m.jsonl"), false, &[]));
    assert_eq!(follower.patience(), POLL); // its directory is not there yet
    fs::create_dir(directory.join("later")).unwrap();
    follower.watch(&watches_of(&directory.join("later/m.jsonl"), false, &[]));
    assert_eq!(follower.patience(), SAFETY); // watched once it is
    let nfs = format!(
        "{LOCAL}2 1 0:40 / {} rw - nfs4 server:/export rw\n",
        directory.display()
    );
    let (mut remote, _) = started(&nfs);
    remote.watch(&watches_of(&directory.join("m.jsonl"), false, &[]));
    assert_eq!(remote.patience(), POLL);
    fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn an_event_file_given_alone_is_watched_in_its_directory() {
    let file = PathBuf::from("/logs/events.out.tfevents.1.host");
    let watches = watches_of(&file, true, std::slice::from_ref(&file));
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].directory, PathBuf::from("/logs"));
    assert!(!watches[0].recursive);
}

#[test]
fn past_the_watch_bound_sources_are_polled() {
    let logdir = place("many");
    let (mut follower, _) = started(LOCAL);
    let wanted: Vec<Watch> = (0..=MAX_WATCHES)
        .map(|i| {
            let directory = logdir.join(format!("run-{i}"));
            fs::create_dir(&directory).unwrap();
            Watch {
                directory,
                names: None,
                recursive: true,
            }
        })
        .collect();
    follower.watch(&wanted[..MAX_WATCHES]);
    assert_eq!(follower.patience(), SAFETY);
    follower.watch(&wanted);
    assert_eq!(follower.patience(), POLL);
    fs::remove_dir_all(&logdir).unwrap();
}

#[test]
fn without_inotify_every_source_is_polled() {
    let directory = place("no-inotify");
    let mut follower = Follower::with(Err("Too many open files".into()), LOCAL.to_owned(), || {});
    follower.watch(&watches_of(&directory.join("m.jsonl"), false, &[]));
    assert_eq!(follower.patience(), POLL); // a local directory, which inotify would watch
    let (mut watching, _) = started(LOCAL);
    watching.watch(&watches_of(&directory.join("m.jsonl"), false, &[]));
    assert_eq!(watching.patience(), SAFETY);
    fs::remove_dir_all(&directory).unwrap();
}
