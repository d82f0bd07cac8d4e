//! Events decoded as TensorBoard's accumulator reads them: simple values as scalars, a step
//! back as a purge marker of its tags (each once, the first `MAX_BATCH_SERIES`, in linear
//! time however many), undecodable bytes and bad tags as problems, and file versions.

use super::*;

fn event(what: What, step: i64) -> Vec<u8> {
    proto::Event {
        wall_time: 1.5,
        step,
        what: Some(what),
    }
    .encode_to_vec()
}

fn scalar(tag: &str, v: f32) -> summary::Value {
    summary::Value {
        tag: tag.into(),
        value: Some(summary::value::Value::SimpleValue(v)),
        ..Default::default()
    }
}

#[test]
fn simple_values_are_scalars_and_a_step_back_marks_its_tags() {
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    let first = event(
        What::Summary(proto::Summary {
            value: vec![scalar("loss", 0.5)],
        }),
        5,
    );
    let got = decode(first.into(), "f", 0, &mut plugins, &mut state);
    assert_eq!(got.scalars, vec![("loss".to_owned(), 0.5)]);
    let back = event(
        What::Summary(proto::Summary {
            value: vec![scalar("loss", 0.25)],
        }),
        3,
    );
    let got = decode(back.into(), "f", 9, &mut plugins, &mut state);
    assert_eq!(
        got.markers,
        vec![Marker {
            tags: vec!["loss".into()]
        }]
    );
}

#[test]
fn a_step_back_over_very_many_tags_marks_the_first_distinct_ones_in_linear_time() {
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    let first = event(
        What::Summary(proto::Summary {
            value: vec![scalar("loss", 0.5)],
        }),
        5,
    );
    decode(first.into(), "f", 0, &mut plugins, &mut state);
    // 300 000 distinct tags (a few MiB of record): pair by pair, 4.5e10 comparisons.
    let mut values: Vec<summary::Value> = vec![scalar("", 0.0), scalar("b", 1.0)];
    values.extend((0..300_000).map(|i| scalar(&format!("t{i}"), 1.0)));
    let back = event(What::Summary(proto::Summary { value: values }), 3);
    let got = decode(back.into(), "f", 9, &mut plugins, &mut state);
    let tags = &got.markers[0].tags;
    assert_eq!(tags.len(), MAX_BATCH_SERIES);
    assert_eq!(tags[..3], ["b", "t0", "t1"]);
    let last = format!("t{}", MAX_BATCH_SERIES - 2);
    assert_eq!(tags.last(), Some(&last));
}

#[test]
fn a_step_back_marks_each_tag_once() {
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    state.most_recent_step = 5;
    let values = ["a", "b", "a", "", "c", "b"]
        .map(|t| scalar(t, 1.0))
        .to_vec();
    let back = event(What::Summary(proto::Summary { value: values }), 3);
    let got = decode(back.into(), "f", 9, &mut plugins, &mut state);
    assert_eq!(
        got.markers,
        vec![Marker {
            tags: vec!["a".into(), "b".into(), "c".into()]
        }]
    );
}

#[test]
fn undecodable_bytes_and_bad_tags_are_problems() {
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    let got = decode(
        Bytes::from_static(b"\xff\xff\xff"),
        "f",
        7,
        &mut plugins,
        &mut state,
    );
    assert!(got.problems[0].starts_with("f@7: not a TensorBoard Event: "));
    let bad = event(
        What::Summary(proto::Summary {
            value: vec![scalar("", 1.0)],
        }),
        1,
    );
    let got = decode(bad.into(), "f", 8, &mut plugins, &mut state);
    assert_eq!(
        got.problems,
        vec!["f@8: tag is empty; value skipped".to_owned()]
    );
}
#[test]
fn file_versions_parse_as_tensorboard_parses_them() {
    assert_eq!(file_version("brain.Event:2"), 2.0);
    assert_eq!(file_version("garbage"), -1.0);
}
