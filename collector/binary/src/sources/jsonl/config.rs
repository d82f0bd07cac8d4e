//! A JSONL line's config record (`{"config": {...}}`, with or without metrics): its object
//! as settings, nested objects flattened with "." (`{"optimizer": {"lr": 0.1}}` declares
//! `optimizer.lr`), a bare `NaN` or `Infinity` read as the number it stands for (and so
//! skipped, said: a setting is finite). The integration artifact's config is read the same.

use serde_json::{Map, Value};

use super::marks::Marks;
use crate::sources::config::{declare, Declared, Objects, Tree};

/// What a line's `config` field declares: `None` when the line has none (or null), or why
/// it is not an object.
pub(super) fn declared(
    field: Option<&Value>,
    marks: Marks<'_>,
) -> Option<Result<Declared, String>> {
    match field {
        None | Some(Value::Null) => None,
        Some(Value::Object(members)) => {
            Some(Ok(declare(tree_members(members, marks), Objects::Flatten)))
        }
        Some(_) => Some(Err("'config' must be an object of name: value".to_owned())),
    }
}

/// What a JSON object (one with no bare tokens: the integration artifact's config)
/// declares, nested objects flattened.
pub fn declared_by(members: &Map<String, Value>) -> Declared {
    declare(tree_members(members, Marks::Plain), Objects::Flatten)
}

fn tree_members(members: &Map<String, Value>, marks: Marks<'_>) -> Vec<(String, Tree)> {
    let seconds = marks.members();
    members
        .iter()
        .enumerate()
        .map(|(at, (name, value))| {
            let marks = marks.part(|_| seconds.get(at).copied());
            (name.clone(), tree(value, marks))
        })
        .collect()
}

fn tree(value: &Value, marks: Marks<'_>) -> Tree {
    if let Some(number) = marks.bare(value) {
        return Tree::Float(number);
    }
    match value {
        Value::Null => Tree::Null,
        Value::Bool(flag) => Tree::Flag(*flag),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(integer), _) => Tree::Integer(i128::from(integer)),
            (None, Some(integer)) => Tree::Integer(i128::from(integer)),
            (None, None) => Tree::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => Tree::Text(text.clone()),
        Value::Array(items) => {
            let seconds = marks.elements();
            Tree::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(at, item)| tree(item, marks.part(|_| seconds.get(at).copied())))
                    .collect(),
            )
        }
        Value::Object(members) => Tree::Map(tree_members(members, marks)),
    }
}
