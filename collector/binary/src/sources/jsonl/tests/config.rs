//! A line's config record: alone or beside metrics, flattened, its bare non-finite tokens
//! read as numbers (and skipped), a setting that cannot be sent skipped with the rest of the
//! line kept, and a record that is not an object refused only when it is all the line has.

use super::refusal;
use crate::sources::config::{ConfigValue, Setting};
use crate::sources::jsonl::{parse_line, Line};

fn line(raw: &str) -> Line {
    parse_line(raw.as_bytes()).unwrap_or_else(|e| panic!("{raw}: {e}"))
}

fn setting(key: &str, value: ConfigValue) -> Setting {
    Setting {
        key: key.to_owned(),
        value,
    }
}

#[test]
fn a_line_of_config_alone_needs_no_step() {
    let read =
        line(r#"{"config": {"optimizer": {"lr": 0.1, "name": "adam"}, "layers": [64, 32]}}"#);
    assert_eq!(
        read,
        Line {
            config: vec![
                setting("optimizer.lr", ConfigValue::Number(0.1)),
                setting("optimizer.name", ConfigValue::Text("adam".into())),
                setting("layers", ConfigValue::Text("[64,32]".into())),
            ],
            ..Line::default()
        }
    );
    let timed = line(r#"{"wall_time": 5.5, "step": 3, "config": {"amp": true}, "metrics": null}"#);
    assert_eq!((timed.wall_time, timed.metrics.len()), (Some(5.5), 0));
    assert_eq!(timed.config, [setting("amp", ConfigValue::Flag(true))]);
    assert_eq!(line(r#"{"config": {}}"#), Line::default());
}

#[test]
fn a_config_record_beside_metrics_keeps_both() {
    let read =
        line(r#"{"step": 2, "wall_time": 1, "metrics": {"loss": 0.5}, "config": {"seed": 7}}"#);
    assert_eq!((read.step, read.metrics), (2, vec![("loss".into(), 0.5)]));
    assert_eq!(read.config, [setting("seed", ConfigValue::Number(7.0))]);
    let null = line(r#"{"step": 2, "metrics": {"loss": 0.5}, "config": null}"#);
    assert!(null.config.is_empty() && null.skipped.is_empty());
}

#[test]
fn bare_non_finite_values_are_numbers_skipped_and_inside_lists_their_tokens() {
    let read = line(r#"{"config": {"a": NaN, "b": [Infinity, -Infinity], "c": "NaN", "d": 1}}"#);
    assert_eq!(
        read.config,
        [
            setting("b", ConfigValue::Text("[Infinity,-Infinity]".into())),
            setting("c", ConfigValue::Text("NaN".into())),
            setting("d", ConfigValue::Number(1.0)),
        ]
    );
    assert_eq!(read.skipped, ["config 'a' is nan, not a finite number"]);
}

#[test]
fn a_setting_that_cannot_be_sent_is_skipped_and_the_line_kept() {
    let long = "x".repeat(4097);
    let raw = format!(
        r#"{{"step": 1, "metrics": {{"x": 1}}, "config": {{"a\tb": 1, "t": "{long}", "ok": false}}}}"#
    );
    let read = line(&raw);
    assert_eq!(read.metrics.len(), 1);
    assert_eq!(read.config, [setting("ok", ConfigValue::Flag(false))]);
    assert_eq!(read.skipped.len(), 2);
    assert!(read.skipped[0].starts_with("config key holds the control character '\\t'"));
}

#[test]
fn a_config_record_that_is_not_an_object() {
    assert_eq!(
        refusal(r#"{"config": [1]}"#),
        "'config' must be an object of name: value"
    );
    let beside = line(r#"{"step": 1, "metrics": {"x": 1}, "config": "lr=0.1"}"#);
    assert_eq!(beside.metrics.len(), 1);
    assert_eq!(
        beside.skipped,
        ["'config' must be an object of name: value"]
    );
    // Without metrics or config, a line is what it was: a metric line missing its parts.
    assert_eq!(
        refusal(r#"{"wall_time": 1}"#),
        "'step' must be a 64-bit integer, got None"
    );
}
