//! The artifact's static config (`config`): its settings by the rules every source's config
//! is held to (`sources::config`, nested objects' keys joined with "." as in a JSONL config
//! record), or why the artifact is refused: a setting that cannot be sent, or more keys than
//! the read models keep. As the contract checks it
//! (`tuneplane.telemetry.v1.config.static_config`).

use serde_json::Value;

use crate::contract::MAX_CONFIG_KEYS;
use crate::sources::config::Setting;
use crate::sources::jsonl::declared_by;

/// The settings of the schema-valid `document`'s config (none without one).
pub fn settings(document: &Value) -> Result<Vec<Setting>, String> {
    let Some(Value::Object(members)) = document.get("config") else {
        return Ok(Vec::new());
    };
    let declared = declared_by(members);
    if let Some(why) = declared.skipped.into_iter().next() {
        return Err(why);
    }
    if declared.settings.len() > MAX_CONFIG_KEYS {
        return Err(format!(
            "config declares {} keys, over the {MAX_CONFIG_KEYS} bound",
            declared.settings.len()
        ));
    }
    Ok(declared.settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::config::ConfigValue;

    #[test]
    fn nested_objects_are_flattened_and_bad_settings_refuse_the_artifact() {
        let document = serde_json::json!({"config": {
            "optimizer": {"lr": 0.1, "betas": [0.9, 0.999]}, "seed": 7, "name": "x",
            "amp": true, "none": null}});
        let shown: Vec<(String, ConfigValue)> = settings(&document)
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.key, s.value))
            .collect();
        assert_eq!(
            shown,
            [
                ("optimizer.lr".into(), ConfigValue::Number(0.1)),
                (
                    "optimizer.betas".into(),
                    ConfigValue::Text("[0.9,0.999]".into())
                ),
                ("seed".into(), ConfigValue::Number(7.0)),
                ("name".into(), ConfigValue::Text("x".into())),
                ("amp".into(), ConfigValue::Flag(true)),
            ]
        );
        assert_eq!(settings(&serde_json::json!({})), Ok(Vec::new()));
        let long = serde_json::json!({"config": {"a": {"b": "x".repeat(4097)}}});
        assert_eq!(
            settings(&long),
            Err("config 'a.b' is a text of 4097 bytes, over the 4096 byte bound".into())
        );
        let many: serde_json::Map<String, Value> = (0..=MAX_CONFIG_KEYS)
            .map(|n| (format!("k{n}"), Value::from(n)))
            .collect();
        assert_eq!(
            settings(&serde_json::json!({ "config": many })),
            Err("config declares 1001 keys, over the 1000 bound".into())
        );
    }
}
