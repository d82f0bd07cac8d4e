//! TensorBoard's HParams plugin: the hyperparameters of a session's start (the plugin data
//! of a `_hparams_/session_start_info` value, an `HParamsPluginData`, as TensorBoard's
//! `hparams_pb` and tensorboardX's `add_hparams` write it) as settings, in the order written
//! (a key written twice has its last value, as a map does): a number, a text or a flag
//! each; a list or a struct is the text of its compact JSON, its members as written; null
//! declares nothing. The plugin's other records (an experiment, a session's end) declare
//! nothing.

use prost::Message;

use super::proto::{h_params_plugin_data::Data, value::Kind, HParamsPluginData, Value};
use crate::sources::config::{declare, Declared, Objects, Tree};

/// The plugin's name, and the tag of its session start records.
pub const PLUGIN: &str = "hparams";
pub const SESSION_START_INFO: &str = "_hparams_/session_start_info";

/// The settings the plugin data `content` declares, or why it is not the plugin's data.
pub fn session_start(content: &[u8]) -> Result<Declared, prost::DecodeError> {
    let Some(Data::SessionStartInfo(start)) = HParamsPluginData::decode(content)?.data else {
        return Ok(Declared::default());
    };
    let members = (start.hparams.into_iter())
        .map(|e| (e.key, e.value.map_or(Tree::Null, tree)))
        .collect();
    Ok(declare(members, Objects::Text))
}

/// A `google.protobuf.Value` as the JSON value it stands for (protobuf bounds its nesting).
fn tree(value: Value) -> Tree {
    match value.kind {
        None | Some(Kind::NullValue(_)) => Tree::Null,
        Some(Kind::NumberValue(number)) => Tree::Float(number),
        Some(Kind::StringValue(text)) => Tree::Text(text),
        Some(Kind::BoolValue(flag)) => Tree::Flag(flag),
        Some(Kind::StructValue(object)) => Tree::Map(
            (object.fields.into_iter())
                .map(|e| (e.key, e.value.map_or(Tree::Null, tree)))
                .collect(),
        ),
        Some(Kind::ListValue(list)) => Tree::List(list.values.into_iter().map(tree).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::SessionStartInfo;
    use super::super::proto::{r#struct, session_start_info, ListValue, Struct};
    use super::*;
    use crate::sources::config::{ConfigValue, Setting};

    fn value(kind: Kind) -> Option<Value> {
        Some(Value { kind: Some(kind) })
    }

    fn entry(key: &str, value: Option<Value>) -> session_start_info::HparamsEntry {
        session_start_info::HparamsEntry {
            key: key.into(),
            value,
        }
    }

    fn field(key: &str, value: Option<Value>) -> r#struct::FieldsEntry {
        r#struct::FieldsEntry {
            key: key.into(),
            value,
        }
    }

    fn declared(hparams: Vec<session_start_info::HparamsEntry>) -> Declared {
        let start = SessionStartInfo {
            hparams,
            ..SessionStartInfo::default()
        };
        let data = HParamsPluginData {
            version: 0,
            data: Some(Data::SessionStartInfo(start)),
        };
        session_start(&data.encode_to_vec()).unwrap_or_default()
    }

    fn setting(key: &str, value: ConfigValue) -> Setting {
        Setting {
            key: key.into(),
            value,
        }
    }

    #[test]
    fn each_hyperparameter_is_a_setting_in_the_order_written() {
        let list = ListValue {
            values: vec![
                Value {
                    kind: Some(Kind::NumberValue(1.0)),
                },
                Value {
                    kind: Some(Kind::StringValue("a".into())),
                },
            ],
        };
        let object = Struct {
            fields: vec![
                field("b", value(Kind::BoolValue(false))),
                field("a", value(Kind::NumberValue(0.5))),
            ],
        };
        let declared = declared(vec![
            entry("lr", value(Kind::NumberValue(0.001))),
            entry("optimizer", value(Kind::StringValue("adam".into()))),
            entry("amp", value(Kind::BoolValue(true))),
            entry("none", value(Kind::NullValue(0))),
            entry("unset", None),
            entry("layers", value(Kind::ListValue(list))),
            entry("nested", value(Kind::StructValue(object))),
            entry("diverged", value(Kind::NumberValue(f64::NAN))),
        ]);
        assert_eq!(
            declared.settings,
            [
                setting("lr", ConfigValue::Number(0.001)),
                setting("optimizer", ConfigValue::Text("adam".into())),
                setting("amp", ConfigValue::Flag(true)),
                setting("layers", ConfigValue::Text(r#"[1.0,"a"]"#.into())),
                setting("nested", ConfigValue::Text(r#"{"b":false,"a":0.5}"#.into())),
            ]
        );
        assert_eq!(
            declared.skipped,
            ["config 'diverged' is nan, not a finite number"]
        );
    }

    #[test]
    fn a_key_written_twice_has_its_last_value_as_a_map_does() {
        let declared = declared(vec![
            entry("b", value(Kind::NumberValue(1.0))),
            entry("a", value(Kind::NumberValue(2.0))),
            entry("b", value(Kind::NumberValue(3.0))),
        ]);
        assert_eq!(
            declared.settings,
            [
                setting("b", ConfigValue::Number(3.0)),
                setting("a", ConfigValue::Number(2.0)),
            ]
        );
    }

    #[test]
    fn other_records_declare_nothing_and_damage_is_said() {
        // version 0 and an experiment (field 2), which is not read.
        assert_eq!(session_start(&[0x08, 0, 0x12, 0]), Ok(Declared::default()));
        assert!(session_start(&[0x1a, 9, 1]).is_err());
    }
}
