//! The fast read agrees with the full decoder wherever it answers, answers for the events
//! PyTorch and tensorboardX write, and leaves every other layout to the decoder.

use prost::Message;

use super::*;
use crate::sources::tensorboard::proto::{self, event::What, summary, Summary};

fn value(tag: &str, v: f32) -> summary::Value {
    summary::Value {
        tag: tag.into(),
        value: Some(summary::value::Value::SimpleValue(v)),
        ..Default::default()
    }
}

fn event(step: i64, wall_time: f64, values: Vec<summary::Value>) -> Vec<u8> {
    proto::Event {
        wall_time,
        step,
        what: Some(What::Summary(Summary { value: values })),
    }
    .encode_to_vec()
}

/// What the full decoder reads of `data`, when it is one simple value with nothing else.
fn decoded(data: &[u8]) -> Option<(i64, f64, String, f32)> {
    let event = proto::Event::decode(data).ok()?;
    let Some(What::Summary(summary)) = event.what else {
        return None;
    };
    let [one] = summary.value.as_slice() else {
        return None;
    };
    let Some(summary::value::Value::SimpleValue(v)) = one.value else {
        return None;
    };
    (one.metadata.is_none() && one.node_name.is_empty() && !one.tag.is_empty())
        .then(|| (event.step, event.wall_time, one.tag.clone(), v))
}

#[test]
fn the_events_scalar_writers_write_are_read() {
    for (step, wall_time, tag, v) in [
        (0, 1.7e9, "train/loss", 0.25f32),
        (-3, 0.0, "ü/ß", f32::NAN),
        (i64::MAX, -1.0, "x", f32::NEG_INFINITY),
        (i64::MIN, 1.5, "a b", -0.0),
    ] {
        let data = event(step, wall_time, vec![value(tag, v)]);
        let read = simple(&data).expect("one simple value");
        assert_eq!((read.step, read.tag), (step, tag));
        assert_eq!(read.wall_time.to_bits(), wall_time.to_bits());
        assert_eq!(read.value.to_bits(), v.to_bits());
    }
}

#[test]
fn other_layouts_are_left_to_the_decoder() {
    let with = |f: &dyn Fn(&mut summary::Value)| {
        let mut v = value("loss", 1.0);
        f(&mut v);
        event(1, 2.0, vec![v])
    };
    let others = [
        event(1, 2.0, vec![value("a", 1.0), value("b", 2.0)]),
        event(1, 2.0, vec![]),
        event(1, 2.0, vec![value("", 1.0)]),
        with(&|v| v.node_name = "n".into()),
        with(&|v| v.metadata = Some(proto::SummaryMetadata::default())),
        with(&|v| v.value = None),
        proto::Event {
            wall_time: 1.0,
            step: 1,
            what: Some(What::FileVersion("brain.Event:2".into())),
        }
        .encode_to_vec(),
        [event(1, 2.0, vec![value("a", 1.0)]), vec![0x10, 5]].concat(), // step twice
        [event(1, 2.0, vec![value("a", 1.0)]), vec![0x18, 1]].concat(), // an unknown field
    ];
    for data in others {
        assert_eq!(simple(&data), None, "{data:?}");
    }
}

#[test]
fn wherever_it_answers_it_agrees_with_the_decoder() {
    // Every cut and every single-byte change of some events: the fast read answers only
    // where the decoder reads one simple value, and then reads the same.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut answered = 0;
    for data in [
        event(7, 1.7e9, vec![value("train/loss", 0.5)]),
        event(-1, 3.25, vec![value("é", 2.0)]),
        event(300, 0.0, vec![value("a", 1.0), value("b", 2.0)]),
    ] {
        for cut in 0..=data.len() {
            check(&data[..cut], &mut answered);
        }
        for _ in 0..4000 {
            let mut changed = data.clone();
            let at = (next() % changed.len() as u64) as usize;
            changed[at] = next() as u8;
            check(&changed, &mut answered);
        }
    }
    assert!(answered > 1000, "only {answered} changed events read fast");
}

fn check(data: &[u8], answered: &mut usize) {
    if let Some(read) = simple(data) {
        *answered += 1;
        let (step, wall_time, tag, v) = decoded(data).expect("the decoder reads it too");
        assert_eq!((read.step, read.tag), (step, tag.as_str()), "{data:?}");
        assert_eq!(read.wall_time.to_bits(), wall_time.to_bits(), "{data:?}");
        assert_eq!(read.value.to_bits(), v.to_bits(), "{data:?}");
    }
}
