//! One `Summary.Value` of an event decoded: a scalar (TF1 `simple_value`, or a rank-0
//! numeric tensor of the scalars plugin or data class), a rich record (image, histogram,
//! audio, text, any other tensor) with its bytes as written, or a problem; a tag's first
//! value declares its plugin for the rest. A session start of the HParams plugin declares
//! its hyperparameters as config too (`hparams`), whatever else it is.

use prost::bytes::Bytes;
use prost::Message;

use super::events::{Decoded, Plugins, Rich, RichKind};
use super::hparams;
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
    let session_start = plugin == hparams::PLUGIN && tag == hparams::SESSION_START_INFO;
    if session_start {
        // Each session start writes its own plugin data; a value without any, the tag's.
        let own = value
            .metadata
            .as_ref()
            .and_then(|m| m.plugin_data.as_ref())
            .filter(|p| p.plugin_name == hparams::PLUGIN);
        let content = own.map_or(&plugin_content, |p| &p.content);
        declare_hparams(content, file, offset, out);
    }
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
        // tensorboardX's session start holds its plugin data only: read above, not skipped.
        None if session_start => return,
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

/// The hyperparameters of the HParams plugin data `content` into `out.config`; each one
/// skipped, and data that does not decode, said.
fn declare_hparams(content: &[u8], file: &str, offset: u64, out: &mut Decoded) {
    match hparams::session_start(content) {
        Ok(declared) => {
            out.config.extend(declared.settings);
            out.problems.extend(
                (declared.skipped.iter()).map(|why| format!("{file}@{offset}: {why}; skipped")),
            );
        }
        Err(refused) => out.problems.push(format!(
            "{file}@{offset}: tag {}: not HParams plugin data ({refused}); its config not read",
            py_str(hparams::SESSION_START_INFO)
        )),
    }
}
