use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::*;
use crate::node::processes::processes_of;
use crate::node::testing::{artifact, host, launch, same_user, stranger, Place, Recorder};

const RUNNING: i32 = State::Running as i32;
const FINISHED: i32 = State::Finished as i32;
const WAITING: i32 = State::Waiting as i32;

/// Launch 7 of a host in `place` whose collector is `script`, running `command`.
fn runner(
    place: &Place,
    host: Arc<Host>,
    control: Arc<Recorder>,
    script: &str,
    command: &[&str],
    environment: HashMap<String, String>,
) -> (LaunchRunner, Arc<Flag>) {
    let document = serde_json::json!({"version": 1, "sources": [
        {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]});
    let mut launched = launch(
        &artifact(&place.0, script),
        &place.0.join("spool"),
        &document,
        "rank-0",
    );
    launched.command = command.iter().map(|c| (*c).to_owned()).collect();
    launched.environment = environment;
    let stopping = Arc::new(Flag::default());
    let directory = host.state_dir.join("launches/7");
    let runner = LaunchRunner::new(launched, control, directory, host, Arc::clone(&stopping));
    (runner, stopping)
}

fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "no {what} within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_training_command_that_cannot_start_is_reported_failed() {
    for (name, value, words) in [
        ("BAD", "a\0b", "environment variable BAD holds a NUL"),
        (
            "A=B",
            "c",
            "environment variable name \"A=B\" is not a name",
        ),
    ] {
        let place = Place::new("unstartable");
        let host = Arc::new(host(&place.0, vec![same_user()]));
        let control = Arc::new(Recorder::default());
        let environment = HashMap::from([(name.to_owned(), value.to_owned())]);
        let (runner, _) = runner(
            &place,
            host,
            Arc::clone(&control),
            "exit 0",
            &["true"],
            environment,
        );
        runner.run();
        let received = control.received.lock().unwrap();
        let [report] = received.as_slice() else {
            panic!("{received:?}")
        };
        assert_eq!(
            (report.state, report.exit_code),
            (State::Failed as i32, 127)
        );
        assert!(
            report
                .detail
                .starts_with("training command could not start: "),
            "{}",
            report.detail
        );
        assert!(report.detail.contains(words), "{}", report.detail);
    }
}

#[test]
fn a_collector_that_keeps_exiting_is_restarted_with_growing_pauses() {
    // It exits at once each time: over 5 s it starts at 0, 0.25, 1.25 and 3.25 s, not 20 times.
    let place = Place::new("restarts");
    let host = Arc::new(host(&place.0, vec![same_user()]));
    let control = Arc::new(Recorder::default());
    let (runner, _) = runner(
        &place,
        Arc::clone(&host),
        Arc::clone(&control),
        "echo started; exit 1",
        &["sleep", "5"],
        HashMap::new(),
    );
    runner.run();
    assert_eq!(control.states(), [RUNNING, FINISHED]);
    let log = fs::read_to_string(host.state_dir.join("launches/7/collector.log")).unwrap();
    let starts = log.matches("started").count();
    assert!((3..=5).contains(&starts), "{starts} starts: {log}");
}

#[test]
fn a_launch_with_no_free_user_is_reported_waiting_and_runs_once_one_is_released() {
    let place = Place::new("waiting");
    let host = Arc::new(host(&place.0, vec![same_user()]));
    assert_eq!(host.users.take(99, None), Some(same_user())); // another launch holds it
    let control = Arc::new(Recorder::default());
    let (runner, _) = runner(
        &place,
        Arc::clone(&host),
        Arc::clone(&control),
        "exit 0",
        &["true"],
        HashMap::new(),
    );
    let thread = std::thread::spawn(move || runner.run());
    until("waiting report", || !control.states().is_empty());
    let detail = control.received.lock().unwrap()[0].detail.clone();
    assert_eq!(
        detail,
        "waiting for a free run-as user: the only one is busy"
    );
    assert!(!host.state_dir.join("launches/7").exists()); // nothing of it made yet
    assert!(!host.work_root.join("7").exists());
    host.users.release(99);
    thread.join().unwrap();
    assert_eq!(control.states(), [WAITING, RUNNING, FINISHED]);
    assert_eq!(host.users.take(100, None), Some(same_user())); // given back at the end
}

#[test]
fn a_waiting_launch_the_agent_stops_makes_nothing_and_leaves_its_turn() {
    let place = Place::new("stopped");
    let host = Arc::new(host(&place.0, vec![same_user()]));
    host.users.take(99, None);
    let control = Arc::new(Recorder::default());
    let (runner, stopping) = runner(
        &place,
        Arc::clone(&host),
        Arc::clone(&control),
        "exit 0",
        &["true"],
        HashMap::new(),
    );
    let thread = std::thread::spawn(move || runner.run());
    until("waiting report", || !control.states().is_empty());
    stopping.set();
    thread.join().unwrap();
    assert_eq!(control.states(), [WAITING]);
    assert!(!host.state_dir.join("launches/7").exists()); // a later life takes it afresh
    host.users.release(99);
    assert_eq!(host.users.take(8, None), Some(same_user())); // nobody waits in front
}

#[test]
fn what_a_launch_leaves_running_as_its_user_ends_before_the_user_is_given_back() {
    let place = Place::new("leftovers");
    let user = stranger(5);
    let host = Arc::new(host(&place.0, vec![user.clone()]));
    let control = Arc::new(Recorder::default());
    // A daemon in a session of its own: the end of the training command's group misses it.
    let daemon = [
        "/bin/sh",
        "-c",
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! >daemon; sleep 1",
    ];
    let (runner, _) = runner(
        &place,
        Arc::clone(&host),
        Arc::clone(&control),
        "exit 0",
        &daemon,
        HashMap::new(),
    );
    runner.run();
    assert_eq!(
        control.states(),
        [RUNNING, FINISHED],
        "{:?}",
        control.received.lock().unwrap()
    );
    assert_eq!(processes_of(user.uid()), Vec::<u32>::new());
    let daemon = fs::read_to_string(host.work_root.join("7/daemon")).unwrap();
    assert!(!daemon.trim().is_empty()); // it was started, as that user, and is gone
    let pid: u32 = daemon.trim().parse().unwrap();
    let live = crate::node::processes::processes(Path::new("/proc"));
    assert!(!live.contains_key(&pid), "{pid} still runs"); // a zombie at most
    let workdir = fs::metadata(host.work_root.join("7")).unwrap(); // the agent's again
    assert_eq!(
        (workdir.uid(), workdir.mode() & 0o777),
        (nix::unistd::geteuid().as_raw(), 0o700)
    );
    assert_eq!(host.users.take(8, None), Some(user));
}
