//! What an event file's reading must remember between steps, saved in the spool with the
//! position: each tag's plugin metadata (it comes with a tag's first value only) and the
//! run's purge state, as JSON (`{"plugins": {tag: [plugin, content, data class]},
//! "purge": [file version, most recent step]}`), the form every collector of the project
//! has saved.

use std::collections::BTreeMap;

use base64::Engine;
use prost::bytes::Bytes;
use serde_json::{json, Value};

use crate::sources::tensorboard::events::{Plugins, PurgeState};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A file's saved state; a file not begun takes the purge state its run's previous file
/// (saved state `previous`) left.
pub fn load_state(state: &str, previous: &str) -> (Plugins, PurgeState) {
    if state.is_empty() {
        let purge = if previous.is_empty() {
            PurgeState::default()
        } else {
            load_state(previous, "").1
        };
        return (Plugins::new(), purge);
    }
    let saved: Value = serde_json::from_str(state).unwrap_or(Value::Null);
    let plugins_of = |value: &Value| -> Plugins {
        let Some(map) = value.as_object() else {
            return Plugins::new();
        };
        map.iter()
            .filter_map(|(tag, v)| {
                let plugin = v.get(0)?.as_str()?.to_owned();
                let content = B64.decode(v.get(1)?.as_str()?).ok()?;
                let class = i32::try_from(v.get(2)?.as_i64()?).ok()?;
                Some((tag.clone(), (plugin, Bytes::from(content), class)))
            })
            .collect()
    };
    match (
        saved.get("plugins"),
        saved.get("purge"),
        saved.as_object().map(|m| m.len()),
    ) {
        (Some(plugins), Some(purge), Some(2)) => (
            plugins_of(plugins),
            PurgeState {
                file_version: purge.get(0).and_then(Value::as_f64),
                most_recent_step: purge.get(1).and_then(Value::as_i64).unwrap_or(-1),
            },
        ),
        // Saved before purge states were: plugins alone, read as file version 2.
        _ => (
            plugins_of(&saved),
            PurgeState {
                file_version: Some(2.0),
                most_recent_step: -1,
            },
        ),
    }
}

pub fn dump_state(plugins: &Plugins, purge: &PurgeState) -> String {
    let plugins: BTreeMap<&String, Value> = plugins
        .iter()
        .map(|(tag, (plugin, content, class))| (tag, json!([plugin, B64.encode(content), class])))
        .collect();
    json!({"plugins": plugins, "purge": [purge.file_version, purge.most_recent_step]}).to_string()
}
