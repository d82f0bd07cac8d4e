//! Events decoded as TensorBoard's accumulator reads them: simple values as scalars, a step
//! back as a purge marker of its tags (each once, the first `MAX_BATCH_SERIES`, in linear
//! time however many), undecodable bytes and bad tags as problems, file versions, and an
//! HParams session start's config.

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
    // 40 000 distinct tags: pair by pair, 8e8 comparisons.
    let mut values: Vec<summary::Value> = vec![scalar("", 0.0), scalar("b", 1.0)];
    values.extend((0..40_000).map(|i| scalar(&format!("t{i}"), 1.0)));
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

#[test]
fn a_summary_of_more_values_than_a_batch_holds_is_refused_before_decoding() {
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    let values = (0..=wire_max()).map(|_| scalar("", 0.0)).collect();
    let huge = event(What::Summary(proto::Summary { value: values }), 3);
    let got = decode(huge.into(), "f", 9, &mut plugins, &mut state);
    assert!(got.scalars.is_empty() && got.rich.is_empty());
    assert_eq!(
        got.problems,
        [format!(
            "f@9: summary of {} values, more than one batch holds ({}); skipped",
            wire_max() + 1,
            wire_max()
        )]
    );
}

#[test]
fn problems_of_one_record_are_bounded() {
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    let values = (0..1000).map(|_| scalar("", 0.0)).collect();
    let got = decode(
        event(What::Summary(proto::Summary { value: values }), 3).into(),
        "f",
        9,
        &mut plugins,
        &mut state,
    );
    assert_eq!(got.problems.len(), 101);
    assert_eq!(
        got.problems.last().map(String::as_str),
        Some("f@9: 900 more problems of the same record not said")
    );
}

fn wire_max() -> usize {
    crate::contract::MAX_BATCH_POINTS
}

/// A session start of the HParams plugin declaring `lr`, as tensorboardX writes it (plugin
/// data alone) or, with `tensor`, as TensorBoard's `hparams_pb` does (an empty tensor).
fn session_start(lr: f64, tensor: bool) -> summary::Value {
    use crate::sources::tensorboard::proto::{
        h_params_plugin_data::Data, session_start_info::HparamsEntry, value::Kind,
        HParamsPluginData, SessionStartInfo, Value,
    };
    let number = Value {
        kind: Some(Kind::NumberValue(lr)),
    };
    let start = SessionStartInfo {
        hparams: vec![HparamsEntry {
            key: "lr".into(),
            value: Some(number),
        }],
        ..SessionStartInfo::default()
    };
    let data = HParamsPluginData {
        version: 0,
        data: Some(Data::SessionStartInfo(start)),
    };
    let plugin_data = proto::summary_metadata::PluginData {
        plugin_name: "hparams".into(),
        content: data.encode_to_vec().into(),
    };
    summary::Value {
        tag: "_hparams_/session_start_info".into(),
        metadata: Some(proto::SummaryMetadata {
            plugin_data: Some(plugin_data),
            ..Default::default()
        }),
        value: tensor.then(|| summary::value::Value::Tensor(proto::TensorProto::default())),
        ..Default::default()
    }
}

#[test]
fn a_session_start_declares_its_hyperparameters_and_is_what_it_was_besides() {
    use crate::sources::config::{ConfigValue, Setting};
    let lr = |value| Setting {
        key: "lr".into(),
        value: ConfigValue::Number(value),
    };
    let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
    let summary = |value| What::Summary(proto::Summary { value: vec![value] });
    // tensorboardX's: plugin data and no value, read as config and not said to be skipped.
    let bare = event(summary(session_start(0.5, false)), 0);
    let got = decode(bare.into(), "f", 0, &mut plugins, &mut state);
    assert_eq!(
        (got.config, got.problems, got.rich.len()),
        (vec![lr(0.5)], vec![], 0)
    );
    // TensorBoard's: its empty tensor stays a rich record; each start its own plugin data.
    let tensor = event(summary(session_start(0.25, true)), 0);
    let got = decode(tensor.into(), "f", 9, &mut plugins, &mut state);
    assert_eq!((got.config, got.rich.len()), (vec![lr(0.25)], 1));
    assert_eq!(got.rich[0].plugin, "hparams");
}
