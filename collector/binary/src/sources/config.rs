//! Config entries (hyperparameters) as a source declares them, before they are a batch's:
//! a JSON value (`Tree`: a JSONL config record's or the integration artifact's, or
//! TensorBoard's HParams `google.protobuf.Value`) made settings by the contract's rules
//! (`tuneplane.telemetry.v1.config`, which checks the artifact by the same): a number (finite),
//! a text (at most MAX_CONFIG_TEXT_BYTES, no NUL) or a flag; null declares nothing; a list,
//! and an object that is not flattened, is the text of its compact JSON as Python's
//! `json.dumps(value, separators=(",", ":"), ensure_ascii=False)` writes it; a key is a
//! name. A key declared twice keeps its last value in its first place, as a dict does.

use std::collections::{HashMap, HashSet};

use crate::contract::{MAX_CONFIG_KEYS, MAX_CONFIG_TEXT_BYTES};
use crate::sources::names::name_problem;
use crate::sources::repr::{py_float, py_str};

/// A declared value, as JSON has them (integers apart: Python keeps them apart).
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    Null,
    Flag(bool),
    Integer(i128),
    Float(f64),
    Text(String),
    List(Vec<Tree>),
    Map(Vec<(String, Tree)>),
}

/// A setting's value, as a `ConfigEntry` holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    Number(f64),
    Text(String),
    Flag(bool),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub key: String,
    pub value: ConfigValue,
}

/// What an object below the top declares: its members, keys joined to its own with "." (a
/// JSONL config record and the artifact, as W&B flattens a config), or the text of its JSON
/// (an HParams value: a hyperparameter is one value).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objects {
    Flatten,
    Text,
}

/// The settings declared, in first-declared order, and why each one skipped was.
#[derive(Debug, Default, PartialEq)]
pub struct Declared {
    pub settings: Vec<Setting>,
    pub skipped: Vec<String>,
}

/// The settings of the object `members`.
pub fn declare(members: Vec<(String, Tree)>, objects: Objects) -> Declared {
    let mut declared = Declared::default();
    let mut places = HashMap::new();
    walk(None, members, objects, &mut declared, &mut places);
    declared
}

fn walk(
    prefix: Option<&str>,
    members: Vec<(String, Tree)>,
    objects: Objects,
    out: &mut Declared,
    places: &mut HashMap<String, usize>,
) {
    for (name, tree) in members {
        let key = match prefix {
            Some(prefix) => format!("{prefix}.{name}"),
            None => name,
        };
        let value = match tree {
            Tree::Null => continue,
            Tree::Map(inner) if objects == Objects::Flatten => {
                walk(Some(&key), inner, objects, out, places);
                continue;
            }
            Tree::Flag(flag) => ConfigValue::Flag(flag),
            Tree::Integer(number) => ConfigValue::Number(number as f64),
            Tree::Float(number) => ConfigValue::Number(number),
            Tree::Text(text) => ConfigValue::Text(text),
            list_or_map => ConfigValue::Text(compact(&list_or_map)),
        };
        match problem(&key, &value) {
            Some(why) => out.skipped.push(why),
            None => match places.get(&key) {
                Some(&at) => out.settings[at].value = value,
                None => {
                    places.insert(key.clone(), out.settings.len());
                    out.settings.push(Setting { key, value });
                }
            },
        }
    }
}

/// Why a setting cannot be sent (the contract's `check_config` would refuse its batch).
pub fn problem(key: &str, value: &ConfigValue) -> Option<String> {
    if let Some(problem) = name_problem(key) {
        return Some(format!("config key {problem}"));
    }
    match value {
        ConfigValue::Number(number) if !number.is_finite() => Some(format!(
            "config {} is {}, not a finite number",
            py_str(key),
            py_float(*number)
        )),
        ConfigValue::Text(text) if text.len() > MAX_CONFIG_TEXT_BYTES => Some(format!(
            "config {} is a text of {} bytes, over the {MAX_CONFIG_TEXT_BYTES} byte bound",
            py_str(key),
            text.len()
        )),
        ConfigValue::Text(text) if text.contains('\0') => Some(format!(
            "config {} is a text holding a NUL character",
            py_str(key)
        )),
        _ => None,
    }
}

/// `tree` as compact JSON, as Python's `json.dumps` writes it with `separators=(",", ":")`
/// and `ensure_ascii=False` (floats as `repr` writes them, non-finite ones as `NaN`,
/// `Infinity`, `-Infinity`).
pub fn compact(tree: &Tree) -> String {
    let mut out = String::new();
    write_compact(tree, &mut out);
    out
}

fn write_compact(tree: &Tree, out: &mut String) {
    match tree {
        Tree::Null => out.push_str("null"),
        Tree::Flag(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Tree::Integer(number) => out.push_str(&number.to_string()),
        Tree::Float(number) if number.is_nan() => out.push_str("NaN"),
        Tree::Float(number) if number.is_infinite() => {
            out.push_str(if *number > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            });
        }
        Tree::Float(number) => out.push_str(&py_float(*number)),
        Tree::Text(text) => out.push_str(&serde_json::Value::from(text.as_str()).to_string()),
        Tree::List(items) => {
            out.push('[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                write_compact(item, out);
            }
            out.push(']');
        }
        Tree::Map(members) => {
            out.push('{');
            for (at, (name, item)) in members.iter().enumerate() {
                if at > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::from(name.as_str()).to_string());
                out.push(':');
                write_compact(item, out);
            }
            out.push('}');
        }
    }
}

/// The distinct keys one source declared so far, up to MAX_CONFIG_KEYS (what the read
/// models keep): a key past them is skipped, said. Kept for as long as the reader runs.
#[derive(Debug, Default)]
pub struct KeyBudget(HashSet<String>);

impl KeyBudget {
    /// The settings whose keys are within the budget; each other is said in `skipped`.
    pub fn within(
        &mut self,
        source: &str,
        settings: Vec<Setting>,
        skipped: &mut Vec<String>,
    ) -> Vec<Setting> {
        let mut kept = Vec::with_capacity(settings.len());
        for setting in settings {
            let known = self.0.contains(&setting.key);
            if known || self.0.len() < MAX_CONFIG_KEYS {
                if !known {
                    self.0.insert(setting.key.clone());
                }
                kept.push(setting);
            } else {
                skipped.push(format!(
                    "config {}: source {} declares more than {MAX_CONFIG_KEYS} keys",
                    py_str(&setting.key),
                    py_str(source)
                ));
            }
        }
        kept
    }
}

/// Largest wall time the contract takes (`validation.MAX_SECONDS`: year 9999).
const MAX_SECONDS: f64 = 253_402_300_799.0;

/// A config entry's wall time: the one given if it is a time, else `read_at` (the
/// collector's clock as it read the record).
pub fn wall_time(given: Option<f64>, read_at: f64) -> f64 {
    given
        .filter(|t| (-MAX_SECONDS..=MAX_SECONDS).contains(t))
        .unwrap_or(read_at)
}

#[cfg(test)]
mod tests;
