//! TensorBoard `Event` records decoded into scalars, rich records and purge markers, from
//! bytes only (the rules of the Python collector's `tbevents.decode`).
//!
//! Only the first value of a tag carries its plugin metadata, so a file's decoder keeps what
//! each tag declared (`Plugins`). Scalars are TF1 `simple_value` and rank-0 numeric tensors
//! of the `scalars` plugin (or the scalar data class); everything else is a rich record,
//! never a scalar. Purge markers are where TensorBoard's accumulator purges, by the rule of
//! the run's `file_version` so far (`PurgeState`, carried from file to file of a run).

use std::collections::{HashMap, HashSet};

use prost::bytes::Buf;
use prost::Message;

use super::proto::{self, event::What, summary, DataClass, DataType, TensorProto};
use crate::sources::names::name_problem;
use crate::sources::repr::py_str;

/// A batch holds at most this many series (`limits.MAX_BATCH_SERIES`): a marker's tags too.
pub const MAX_BATCH_SERIES: usize = 1024;

/// tag → (plugin name, data class) as the tag's first value declared them.
pub type Plugins = HashMap<String, (String, i32)>;

/// What TensorBoard's accumulator decides a run's purges by, as read so far.
#[derive(Debug)]
pub struct PurgeState {
    pub file_version: Option<f64>,
    pub most_recent_step: i64,
}

impl Default for PurgeState {
    fn default() -> Self {
        Self {
            file_version: None,
            most_recent_step: -1,
        }
    }
}

impl PurgeState {
    /// Whether SessionLog.START purges (file_version 2 or more), not out-of-order steps.
    fn restarts(&self) -> bool {
        self.file_version.is_some_and(|v| v >= 2.0)
    }
}

/// `brain.Event:2` → 2.0, as TensorBoard parses it (-1 when it cannot).
fn file_version(text: &str) -> f64 {
    let last = text.rsplit("brain.Event:").next().unwrap_or(text);
    last.trim().parse().unwrap_or(-1.0)
}

/// A rich record's kind, as `read` names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RichKind {
    Image,
    Histogram,
    Audio,
    Text,
    Tensor,
}

impl RichKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Histogram => "histogram",
            Self::Audio => "audio",
            Self::Text => "text",
            Self::Tensor => "tensor",
        }
    }

    fn of_plugin(plugin: &str) -> Self {
        match plugin {
            "images" => Self::Image,
            "histograms" => Self::Histogram,
            "audio" => Self::Audio,
            "text" => Self::Text,
            _ => Self::Tensor,
        }
    }
}

#[derive(Debug, PartialEq)]
pub struct Rich {
    pub kind: RichKind,
    pub tag: String,
    pub plugin: String,
    pub bytes: usize,
}

/// A purge marker: a restart (no tags) or an out-of-order step purging its tags.
#[derive(Debug, PartialEq)]
pub struct Marker {
    pub tags: Vec<String>,
}

/// What one event gave; `step` and `wall_time` are the event's.
#[derive(Debug, Default)]
pub struct Decoded {
    pub step: i64,
    pub wall_time: f64,
    pub scalars: Vec<(String, f64)>,
    pub rich: Vec<Rich>,
    pub markers: Vec<Marker>,
    pub problems: Vec<String>,
}

/// One element of `tensor_content` (little-endian) as a number.
type FromContent = fn(&[u8]) -> f64;

/// The value of a rank-0 numeric tensor, or why it is not one.
fn tensor_scalar(tensor: &TensorProto) -> Result<f64, String> {
    if tensor
        .tensor_shape
        .as_ref()
        .is_some_and(|s| !s.dim.is_empty() || s.unknown_rank)
    {
        return Err("tensor is not rank 0".to_owned());
    }
    let dtype = DataType::try_from(tensor.dtype).unwrap_or(DataType::DtInvalid);
    let (field, size, from_content): (&str, usize, FromContent) = match dtype {
        DataType::DtFloat => ("float_val", 4, |b| f64::from(f32::from_le_bytes(le(b)))),
        DataType::DtDouble => ("double_val", 8, |b| f64::from_le_bytes(le(b))),
        DataType::DtInt32 => ("int_val", 4, |b| f64::from(i32::from_le_bytes(le(b)))),
        DataType::DtInt16 => ("int_val", 2, |b| f64::from(i16::from_le_bytes(le(b)))),
        DataType::DtInt8 => ("int_val", 1, |b| f64::from(i8::from_le_bytes(le(b)))),
        DataType::DtUint8 => ("int_val", 1, |b| f64::from(u8::from_le_bytes(le(b)))),
        DataType::DtUint16 => ("int_val", 2, |b| f64::from(u16::from_le_bytes(le(b)))),
        DataType::DtInt64 => ("int64_val", 8, |b| i64::from_le_bytes(le(b)) as f64),
        DataType::DtUint32 => ("uint32_val", 4, |b| f64::from(u32::from_le_bytes(le(b)))),
        DataType::DtUint64 => ("uint64_val", 8, |b| u64::from_le_bytes(le(b)) as f64),
        DataType::DtBool => ("bool_val", 1, |b| {
            f64::from(u8::from(b.first() != Some(&0)))
        }),
        DataType::DtHalf => ("half_val", 2, |b| half(u16::from_le_bytes(le(b)))),
        DataType::DtBfloat16 => ("half_val", 2, |b| bfloat16(u16::from_le_bytes(le(b)))),
        other => return Err(format!("dtype {} is not numeric", other.as_str_name())),
    };
    if !tensor.tensor_content.is_empty() {
        if tensor.tensor_content.len() != size {
            return Err("tensor_content is not one element".to_owned());
        }
        return Ok(from_content(&tensor.tensor_content));
    }
    let values: Vec<f64> = match field {
        "float_val" => tensor.float_val.iter().map(|v| f64::from(*v)).collect(),
        "double_val" => tensor.double_val.clone(),
        "int64_val" => tensor.int64_val.iter().map(|v| *v as f64).collect(),
        "uint32_val" => tensor.uint32_val.iter().map(|v| f64::from(*v)).collect(),
        "uint64_val" => tensor.uint64_val.iter().map(|v| *v as f64).collect(),
        "bool_val" => tensor
            .bool_val
            .iter()
            .map(|v| f64::from(u8::from(*v)))
            .collect(),
        "half_val" if dtype == DataType::DtHalf => {
            tensor.half_val.iter().map(|v| half(*v as u16)).collect()
        }
        "half_val" => tensor
            .half_val
            .iter()
            .map(|v| bfloat16(*v as u16))
            .collect(),
        _ => tensor.int_val.iter().map(|v| f64::from(*v)).collect(),
    };
    match values.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!("{field} holds {} values", values.len())),
    }
}

fn le<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.try_into().unwrap_or([0; N])
}

/// IEEE half precision bits as a number.
fn half(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + fraction / 1024.0) * 2f64.powi(e - 15),
    }
}

fn bfloat16(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

/// Decodes one event record; what each tag declared lands in `plugins`, what TensorBoard
/// purges by in the run's `state`.
pub fn decode(
    data: impl Buf,
    file: &str,
    offset: u64,
    plugins: &mut Plugins,
    state: &mut PurgeState,
) -> Decoded {
    let mut out = Decoded::default();
    let event = match proto::Event::decode(data) {
        Ok(event) => event,
        Err(refused) => {
            out.problems.push(format!(
                "{file}@{offset}: not a TensorBoard Event: {refused}"
            ));
            return out;
        }
    };
    (out.step, out.wall_time) = (event.step, event.wall_time);
    match event.what {
        Some(What::FileVersion(text)) => state.file_version = Some(file_version(&text)),
        Some(What::Summary(summary)) => {
            if !state.restarts() && event.step < state.most_recent_step {
                // The first MAX_BATCH_SERIES distinct tags that are names, in order: through
                // a set (a summary of a record may hold millions of values), and no further.
                let (mut tags, mut seen) = (Vec::new(), HashSet::new());
                for value in &summary.value {
                    if tags.len() == MAX_BATCH_SERIES {
                        break;
                    }
                    let tag = if value.tag.is_empty() {
                        &value.node_name
                    } else {
                        &value.tag
                    };
                    if name_problem(tag).is_none() && seen.insert(tag.as_str()) {
                        tags.push(tag.clone());
                    }
                }
                if !tags.is_empty() {
                    out.markers.push(Marker { tags });
                }
            }
            state.most_recent_step = event.step;
            for value in &summary.value {
                decode_value(value, file, offset, plugins, &mut out);
            }
        }
        Some(What::SessionLog(log))
            if log.status == proto::session_log::SessionStatus::Start as i32
                && state.restarts() =>
        {
            out.markers.push(Marker { tags: Vec::new() });
        }
        _ => {}
    }
    out
}

fn decode_value(
    value: &summary::Value,
    file: &str,
    offset: u64,
    plugins: &mut Plugins,
    out: &mut Decoded,
) {
    let tag = if value.tag.is_empty() {
        &value.node_name
    } else {
        &value.tag
    };
    if let Some(problem) = name_problem(tag) {
        out.problems
            .push(format!("{file}@{offset}: tag {problem}; value skipped"));
        return;
    }
    if let (Some(meta), false) = (&value.metadata, plugins.contains_key(tag)) {
        let plugin = meta
            .plugin_data
            .as_ref()
            .map(|p| p.plugin_name.clone())
            .unwrap_or_default();
        if let Some(problem) = name_problem(&plugin).filter(|_| !plugin.is_empty()) {
            out.problems.push(format!(
                "{file}@{offset}: tag {}: plugin name {problem}; value skipped",
                py_str(tag)
            ));
            return;
        }
        plugins.insert(tag.clone(), (plugin, meta.data_class));
    }
    let (plugin, data_class) = plugins
        .get(tag)
        .cloned()
        .unwrap_or((String::new(), DataClass::Unknown as i32));
    let kind = match &value.value {
        Some(summary::value::Value::SimpleValue(v)) => {
            out.scalars.push((tag.clone(), f64::from(*v)));
            return;
        }
        Some(summary::value::Value::Tensor(tensor))
            if plugin == "scalars" || data_class == DataClass::Scalar as i32 =>
        {
            match tensor_scalar(tensor) {
                Ok(v) => {
                    out.scalars.push((tag.clone(), v));
                    return;
                }
                Err(why) => out.problems.push(format!(
                    "{file}@{offset}: tag {} of the scalars plugin kept as a tensor: {why}",
                    py_str(tag)
                )),
            }
            RichKind::of_plugin(&plugin)
        }
        None | Some(summary::value::Value::ObsoleteOldStyleHistogram(_)) => {
            out.problems.push(format!(
                "{file}@{offset}: tag {} has no readable value; skipped",
                py_str(tag)
            ));
            return;
        }
        Some(summary::value::Value::Image(_)) => RichKind::Image,
        Some(summary::value::Value::Histo(_)) => RichKind::Histogram,
        Some(summary::value::Value::Audio(_)) => RichKind::Audio,
        Some(summary::value::Value::Tensor(_)) => RichKind::of_plugin(&plugin),
    };
    out.rich.push(Rich {
        kind,
        tag: tag.clone(),
        plugin,
        bytes: value.encoded_len(),
    });
}

#[cfg(test)]
mod tests {
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
        let got = decode(first.as_slice(), "f", 0, &mut plugins, &mut state);
        assert_eq!(got.scalars, vec![("loss".to_owned(), 0.5)]);
        let back = event(
            What::Summary(proto::Summary {
                value: vec![scalar("loss", 0.25)],
            }),
            3,
        );
        let got = decode(back.as_slice(), "f", 9, &mut plugins, &mut state);
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
        decode(first.as_slice(), "f", 0, &mut plugins, &mut state);
        // 300 000 distinct tags (a few MiB of record): pair by pair, 4.5e10 comparisons.
        let mut values: Vec<summary::Value> = vec![scalar("", 0.0), scalar("b", 1.0)];
        values.extend((0..300_000).map(|i| scalar(&format!("t{i}"), 1.0)));
        let back = event(What::Summary(proto::Summary { value: values }), 3);
        let started = std::time::Instant::now();
        let got = decode(back.as_slice(), "f", 9, &mut plugins, &mut state);
        let tags = &got.markers[0].tags;
        assert_eq!(tags.len(), MAX_BATCH_SERIES);
        assert_eq!(tags[..3], ["b", "t0", "t1"]);
        assert_eq!(tags.last().map(String::as_str), Some("t1022"));
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    #[test]
    fn a_step_back_marks_each_tag_once() {
        let (mut plugins, mut state) = (Plugins::new(), PurgeState::default());
        state.most_recent_step = 5;
        let values = ["a", "b", "a", "", "c", "b"]
            .map(|t| scalar(t, 1.0))
            .to_vec();
        let back = event(What::Summary(proto::Summary { value: values }), 3);
        let got = decode(back.as_slice(), "f", 9, &mut plugins, &mut state);
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
        let got = decode(&b"\xff\xff\xff"[..], "f", 7, &mut plugins, &mut state);
        assert!(got.problems[0].starts_with("f@7: not a TensorBoard Event: "));
        let bad = event(
            What::Summary(proto::Summary {
                value: vec![scalar("", 1.0)],
            }),
            1,
        );
        let got = decode(bad.as_slice(), "f", 8, &mut plugins, &mut state);
        assert_eq!(
            got.problems,
            vec!["f@8: tag is empty; value skipped".to_owned()]
        );
    }

    #[test]
    fn half_and_bfloat16_bits_read_as_numbers() {
        assert_eq!(half(0x3c00), 1.0);
        assert_eq!(half(0xc000), -2.0);
        assert_eq!(bfloat16(0x3f80), 1.0);
        assert!(half(0x7e00).is_nan());
    }

    #[test]
    fn file_versions_parse_as_tensorboard_parses_them() {
        assert_eq!(file_version("brain.Event:2"), 2.0);
        assert_eq!(file_version("garbage"), -1.0);
    }
}
