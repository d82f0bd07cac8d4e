//! TensorBoard `Event` records decoded into scalars, rich records, purge markers and the
//! config a session start of the HParams plugin declares, from bytes only, as TensorBoard's
//! accumulator reads them.
//!
//! Only the first value of a tag carries its plugin metadata, so a file's decoder keeps what
//! each tag declared (`Plugins`). Scalars are TF1 `simple_value` and rank-0 numeric tensors
//! of the `scalars` plugin (or the scalar data class); everything else is a rich record,
//! never a scalar. Purge markers are where TensorBoard's accumulator purges, by the rule of
//! the run's `file_version` so far (`PurgeState`, carried from file to file of a run).

use std::collections::{HashMap, HashSet};

use prost::bytes::Bytes;
use prost::Message;

use super::proto::{self, event::What, summary};
use super::{value, wire};
pub use crate::contract::MAX_BATCH_SERIES;
use crate::sources::config::Setting;
use crate::sources::names::name_problem;

/// Problems said of one record, at most (each of its values could have one).
const MAX_PROBLEMS: usize = 100;

/// tag → (plugin name, data class) as the tag's first value declared them.
pub type Plugins = HashMap<String, (String, Bytes, i32)>;

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
    pub fn restarts(&self) -> bool {
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

    pub(super) fn of_plugin(plugin: &str) -> Self {
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
    pub plugin_content: Bytes,
    /// The `Summary.Value` as written.
    pub payload: Bytes,
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
    /// The hyperparameters of HParams session starts.
    pub config: Vec<Setting>,
    pub problems: Vec<String>,
}

/// Decodes one event record; what each tag declared lands in `plugins`, what TensorBoard
/// purges by in the run's `state`.
pub fn decode(
    data: Bytes,
    file: &str,
    offset: u64,
    plugins: &mut Plugins,
    state: &mut PurgeState,
) -> Decoded {
    let mut out = Decoded::default();
    let values = wire::summary_values(&data);
    if values > wire::MAX_SUMMARY_VALUES {
        out.problems.push(format!(
            "{file}@{offset}: summary of {values} values, more than one batch holds ({}); \
             skipped",
            wire::MAX_SUMMARY_VALUES
        ));
        return out;
    }
    let event = match proto::Event::decode(data.clone()) {
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
            let raw = summary
                .value
                .iter()
                .any(|v| !matches!(v.value, Some(summary::value::Value::SimpleValue(_))))
                .then(|| wire::raw_values(data, summary.value.len()))
                .flatten();
            for (at, value) in summary.value.iter().enumerate() {
                let written = raw.as_ref().and_then(|r| r.get(at));
                value::decode_value(value, written, file, offset, plugins, &mut out);
            }
            if out.problems.len() > MAX_PROBLEMS {
                let more = out.problems.len() - MAX_PROBLEMS;
                out.problems.truncate(MAX_PROBLEMS);
                out.problems.push(format!(
                    "{file}@{offset}: {more} more problems of the same record not said"
                ));
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

#[cfg(test)]
mod tests;
