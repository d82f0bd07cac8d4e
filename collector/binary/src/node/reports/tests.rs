use super::*;
use crate::node::testing::{Place, Recorder};

fn report(state: State) -> LaunchReport {
    LaunchReport {
        launch_id: 7,
        state: state as i32,
        exit_code: 3,
        detail: "training command exited with 3".into(),
        undelivered_batches: 0,
    }
}

fn launch_dir(place: &Place) -> std::path::PathBuf {
    let directory = place.0.join("launches/7");
    fs::create_dir_all(&directory).unwrap();
    directory
}

#[test]
fn a_final_report_control_missed_is_kept_and_sent_again() {
    let place = Place::new("reports");
    let directory = launch_dir(&place);
    let control = Recorder::default();
    *control.unreachable.lock().unwrap() = 1;
    assert!(!send(
        &control,
        &directory,
        &report(State::Failed),
        Duration::ZERO
    ));
    assert!(directory.join(PENDING).is_file());
    let launches = place.0.join("launches");
    assert_eq!(resend_pending(&control, &launches, &BTreeSet::from([7])), 0); // its runner's
    assert_eq!(resend_pending(&control, &launches, &BTreeSet::new()), 1);
    assert!(!directory.join(PENDING).exists());
    assert_eq!(*control.received.lock().unwrap(), [report(State::Failed)]);
    assert_eq!(resend_pending(&control, &launches, &BTreeSet::new()), 0); // once
}

#[test]
fn a_running_report_is_not_kept_and_one_refused_for_good_is_dropped() {
    let place = Place::new("reports");
    let directory = launch_dir(&place);
    let away = Recorder::default();
    *away.unreachable.lock().unwrap() = 1;
    assert!(!send(
        &away,
        &directory,
        &report(State::Running),
        Duration::ZERO
    ));
    assert!(!directory.join(PENDING).exists());
    let refusing = Recorder {
        refusing: true,
        ..Recorder::default()
    };
    assert!(send(
        &refusing,
        &directory,
        &report(State::Finished),
        Duration::ZERO
    ));
    assert!(!directory.join(PENDING).exists());
}
