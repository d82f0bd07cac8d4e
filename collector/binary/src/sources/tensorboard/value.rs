//! One `Summary.Value` of an event decoded: a scalar (TF1 `simple_value`, or a rank-0
//! numeric tensor of the scalars plugin or data class), a rich record (image, histogram,
//! audio, text, any other tensor) with its bytes as written, or a problem; a tag's first
//! value declares its plugin for the rest.

use prost::bytes::Bytes;
use prost::Message;

use super::events::{Decoded, Plugins, Rich, RichKind};
use super::proto::{summary, DataClass};
use super::tensor::tensor_scalar;
use crate::sources::names::name_problem;
use crate::sources::repr::py_str;

pub fn decode_value(
    value: &summary::Value,
    written: Option<&Bytes>,
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
        let content = meta
            .plugin_data
            .as_ref()
            .map(|p| p.content.clone())
            .unwrap_or_default();
        plugins.insert(tag.clone(), (plugin, content, meta.data_class));
    }
    let (plugin, plugin_content, data_class) = plugins.get(tag).cloned().unwrap_or((
        String::new(),
        Bytes::new(),
        DataClass::Unknown as i32,
    ));
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
        plugin_content,
        payload: written
            .cloned()
            .unwrap_or_else(|| Bytes::from(value.encode_to_vec())),
    });
}
