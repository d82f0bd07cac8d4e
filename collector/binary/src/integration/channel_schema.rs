//! A rich channel's JSON Schema is data a user wrote, never instructions to fetch anything.
//!
//! A `$ref` must be a local JSON pointer (`#` or `#/...`), checked where the artifact is
//! checked, and schemas are compiled with a retriever that refuses every URI, so nothing is
//! fetched even through a `$id` that moves the base URI (the crate is built without its
//! HTTP and file resolvers too). Nesting is bounded as the services bound it.

use jsonschema::{Draft, Retrieve, Uri, Validator};
use serde_json::Value;

use crate::sources::repr::py_str;

/// Objects and arrays within one another, at most (as the services allow).
pub const MAX_DEPTH: usize = 20;

struct NoFetching;

impl Retrieve for NoFetching {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "$ref {uri} would be fetched; channel schemas are compiled offline, only \
                     local references (#/...) resolve"
        )
        .into())
    }
}

fn is_local(reference: &str) -> bool {
    reference == "#" || reference.starts_with("#/")
}

/// Refuses the first non-local `$ref` or too deep a nesting, naming `place` the schema
/// sits and the place in it. Walks iteratively: a deep schema cannot exhaust the stack.
pub fn check_schema(schema: &Value, place: &str) -> Result<(), String> {
    let mut stack: Vec<(String, usize, &Value)> = vec![(String::new(), 0, schema)];
    while let Some((path, depth, node)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!(
                "{place}{path} is nested deeper than {MAX_DEPTH} levels of \
                                objects and arrays, more than a channel schema may be"
            ));
        }
        let children: Vec<(String, &Value)> = match node {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref") {
                    if !reference.as_str().is_some_and(is_local) {
                        let shown = reference
                            .as_str()
                            .map_or_else(|| reference.to_string(), py_str);
                        return Err(format!(
                            "{place}{path}.$ref is {shown}: only local \
                                            references (# or #/...) are allowed in a channel \
                                            schema; nothing is fetched"
                        ));
                    }
                }
                map.iter()
                    .map(|(k, v)| (format!("{path}.{k}"), v))
                    .collect()
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{path}[{i}]"), v))
                .collect(),
            _ => Vec::new(),
        };
        for (child, value) in children.into_iter().rev() {
            if value.is_object() || value.is_array() {
                stack.push((child, depth + 1, value));
            }
        }
    }
    Ok(())
}

/// The schema's validator (draft 7 unless it names its own), compiled with no way to
/// fetch anything; refused with the reason when it is not a usable schema.
pub fn compile_offline(schema: &Value, place: &str) -> Result<Validator, String> {
    check_schema(schema, place)?;
    jsonschema::options()
        .with_draft(Draft::Draft7)
        .with_retriever(NoFetching)
        .build(schema)
        .map_err(|e| format!("{place} is not a usable JSON Schema: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_local_references_compile() {
        assert!(compile_offline(
            &json!({"$ref": "#/definitions/a", "definitions": {"a": {}}}),
            "s"
        )
        .is_ok());
        let far = compile_offline(
            &json!({"properties": {"x": {"$ref": "http://h/s.json"}}}),
            "s",
        );
        assert!(far
            .err()
            .unwrap_or_default()
            .contains("s.properties.x.$ref is 'http://h/s.json'"));
        let moved = compile_offline(&json!({"$id": "file:///etc/", "$ref": "#"}), "s");
        assert!(moved.is_ok(), "a local ref under a $id stays local");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut schema = json!({});
        for _ in 0..30 {
            schema = json!({"items": schema});
        }
        let refused = check_schema(&schema, "c").unwrap_err();
        assert!(
            refused.contains("nested deeper than 20 levels"),
            "{refused}"
        );
    }
}
