//! The rules of an integration artifact that its JSON Schema cannot say: members' names a
//! rank template makes, ids and owners as names (the schema's pattern, restated: they
//! become path components), NUL-free paths, channel schemas that stay inside themselves,
//! ids and paths declared once, and mappings of declared sources, one per (source, run
//! path, tag), with a run path only of a TensorBoard source.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::channel_schema;
use crate::sources::names::{is_identifier, run_path_problem, NAME_RULE};
use crate::sources::repr::py_str;

pub(super) fn entries<'a>(document: &'a Value, group: &str) -> &'a [Value] {
    document
        .get(group)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(super) fn text<'a>(entry: &'a Value, key: &str) -> Option<&'a str> {
    entry.get(key).and_then(Value::as_str)
}

fn names_and_paths(document: &Value) -> Result<(), String> {
    let rank = document
        .pointer("/members/rank")
        .and_then(Value::as_str)
        .unwrap_or("rank-{rank}");
    if !is_identifier(&rank.replace("{rank}", "0")) {
        return Err(format!(
            "members.rank {} does not make names: {NAME_RULE}",
            py_str(rank)
        ));
    }
    for group in ["sources", "channels"] {
        for (at, entry) in entries(document, group).iter().enumerate() {
            for what in ["id", "owner"] {
                let value = text(entry, what).unwrap_or_default();
                if !is_identifier(value) {
                    return Err(format!(
                        "{group}[{at}].{what} {} is not a name: {NAME_RULE}",
                        py_str(value)
                    ));
                }
            }
            if text(entry, "path").unwrap_or_default().contains('\0') {
                return Err(format!("{group}[{at}].path holds a NUL character"));
            }
            if group == "channels" {
                let schema = entry.get("schema").unwrap_or(&Value::Null);
                channel_schema::check_schema(schema, &format!("{group}[{at}].schema"))?;
            }
        }
    }
    Ok(())
}

fn declared_once(declared: &[&Value]) -> Result<(), String> {
    for what in ["id", "path"] {
        let mut seen = HashSet::new();
        let mut repeated: Vec<&str> = declared
            .iter()
            .filter_map(|entry| text(entry, what))
            .filter(|value| !seen.insert(*value))
            .collect();
        repeated.sort_unstable();
        repeated.dedup();
        if !repeated.is_empty() {
            return Err(format!(
                "{what} {} declared more than once; each source is read by \
                                exactly one reader",
                repeated.join(", ")
            ));
        }
    }
    Ok(())
}

fn mappings(document: &Value, kinds: &HashMap<&str, &str>) -> Result<(), String> {
    let mut seen = HashSet::new();
    for (at, mapping) in entries(document, "mappings").iter().enumerate() {
        let (source, run_path) = (text(mapping, "source"), text(mapping, "run_path"));
        let tag = text(mapping, "tag").unwrap_or_default();
        if let Some(source) = source.filter(|s| !kinds.contains_key(s)) {
            return Err(format!(
                "mappings[{at}].source {} is not a declared source",
                py_str(source)
            ));
        }
        if let Some(run_path) = run_path {
            if let Some(problem) = run_path_problem(run_path) {
                return Err(format!("mappings[{at}].run_path {problem}"));
            }
            if let Some(source) =
                source.filter(|s| !run_path.is_empty() && kinds[s] != "tensorboard")
            {
                return Err(format!(
                    "mappings[{at}].run_path {}: source {} is {}, and only \
                                    TensorBoard sources have runs",
                    py_str(run_path),
                    py_str(source),
                    kinds[source]
                ));
            }
        }
        if !seen.insert((source, run_path, tag)) {
            let run = run_path
                .map(|r| format!(" run {}", py_str(r)))
                .unwrap_or_default();
            return Err(format!(
                "mappings[{at}] maps tag {} of {}{run} a second time",
                py_str(tag),
                source.unwrap_or("any source")
            ));
        }
    }
    Ok(())
}

/// Checks the schema-valid `document`; the error is prefixed with `origin`.
pub fn check(document: &Value, origin: &str) -> Result<(), String> {
    let declared: Vec<&Value> = entries(document, "sources")
        .iter()
        .chain(entries(document, "channels"))
        .collect();
    let kinds: HashMap<&str, &str> = declared
        .iter()
        .filter_map(|e| Some((text(e, "id")?, text(e, "kind").unwrap_or("channel"))))
        .collect();
    names_and_paths(document)
        .and_then(|()| declared_once(&declared))
        .and_then(|()| mappings(document, &kinds))
        .map_err(|why| format!("{origin}: {why}"))
}
