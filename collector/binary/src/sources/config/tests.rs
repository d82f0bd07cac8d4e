//! The settings a declared object gives: flattened or as text, typed, deduplicated as a dict
//! is, each one that cannot be sent said; lists written as Python's `json.dumps` writes
//! them; a source's keys within their budget.

use super::*;

fn text(value: &str) -> ConfigValue {
    ConfigValue::Text(value.to_owned())
}

fn shown(declared: &Declared) -> Vec<(&str, &ConfigValue)> {
    declared
        .settings
        .iter()
        .map(|s| (s.key.as_str(), &s.value))
        .collect()
}

fn object(members: &[(&str, Tree)]) -> Vec<(String, Tree)> {
    members
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[test]
fn nested_objects_flatten_with_dots_and_values_keep_their_type() {
    let optimizer = Tree::Map(object(&[
        ("lr", Tree::Float(0.1)),
        (
            "betas",
            Tree::List(vec![Tree::Float(0.9), Tree::Integer(1)]),
        ),
        ("empty", Tree::Map(Vec::new())),
    ]));
    let declared = declare(
        object(&[
            ("optimizer", optimizer),
            ("seed", Tree::Integer(7)),
            ("name", Tree::Text("run".into())),
            ("amp", Tree::Flag(false)),
            ("none", Tree::Null),
        ]),
        Objects::Flatten,
    );
    assert_eq!(
        shown(&declared),
        [
            ("optimizer.lr", &ConfigValue::Number(0.1)),
            ("optimizer.betas", &text("[0.9,1]")),
            ("seed", &ConfigValue::Number(7.0)),
            ("name", &text("run")),
            ("amp", &ConfigValue::Flag(false)),
        ]
    );
    assert!(declared.skipped.is_empty());
}

#[test]
fn an_object_not_flattened_is_its_json_text() {
    let nested = Tree::Map(object(&[
        ("a", Tree::Null),
        ("b", Tree::Text("é\"\n".into())),
    ]));
    let declared = declare(object(&[("x", nested)]), Objects::Text);
    assert_eq!(
        shown(&declared),
        [("x", &text("{\"a\":null,\"b\":\"é\\\"\\n\"}"))]
    );
}

#[test]
fn a_key_declared_twice_keeps_its_last_value_in_its_first_place() {
    let declared = declare(
        object(&[
            ("a.b", Tree::Integer(1)),
            ("c", Tree::Integer(2)),
            ("a", Tree::Map(object(&[("b", Tree::Integer(3))]))),
        ]),
        Objects::Flatten,
    );
    assert_eq!(
        shown(&declared),
        [
            ("a.b", &ConfigValue::Number(3.0)),
            ("c", &ConfigValue::Number(2.0))
        ]
    );
}

#[test]
fn settings_that_cannot_be_sent_are_skipped_and_said() {
    let declared = declare(
        object(&[
            ("", Tree::Integer(1)),
            ("tab\tkey", Tree::Integer(1)),
            ("nan", Tree::Float(f64::NAN)),
            ("inf", Tree::Float(f64::NEG_INFINITY)),
            ("long", Tree::Text("x".repeat(MAX_CONFIG_TEXT_BYTES + 1))),
            ("nul", Tree::Text("a\0b".into())),
            ("fits", Tree::Text("x".repeat(MAX_CONFIG_TEXT_BYTES))),
        ]),
        Objects::Flatten,
    );
    assert_eq!(declared.settings.len(), 1);
    assert_eq!(
        declared.skipped,
        [
            "config key is empty",
            "config key holds the control character '\\t' at 3: 'tab\\tkey'",
            "config 'nan' is nan, not a finite number",
            "config 'inf' is -inf, not a finite number",
            "config 'long' is a text of 4097 bytes, over the 4096 byte bound",
            "config 'nul' is a text holding a NUL character",
        ]
    );
}

#[test]
fn lists_are_written_as_pythons_compact_json() {
    let list = Tree::List(vec![
        Tree::Float(1.0),
        Tree::Float(1e-5),
        Tree::Float(1e16),
        Tree::Float(f64::NAN),
        Tree::Float(f64::INFINITY),
        Tree::Integer(-3),
        Tree::Flag(true),
        Tree::Null,
        Tree::Text("a\u{1}".into()),
        Tree::List(Vec::new()),
    ]);
    assert_eq!(
        compact(&list),
        r#"[1.0,1e-05,1e+16,NaN,Infinity,-3,true,null,"a\u0001",[]]"#
    );
}

#[test]
fn a_sources_keys_past_the_budget_are_skipped_and_known_ones_kept() {
    let setting = |key: String| Setting {
        key,
        value: ConfigValue::Flag(true),
    };
    let mut budget = KeyBudget::default();
    let mut skipped = Vec::new();
    let first: Vec<Setting> = (0..MAX_CONFIG_KEYS)
        .map(|n| setting(format!("k{n}")))
        .collect();
    assert_eq!(
        budget.within("s", first, &mut skipped).len(),
        MAX_CONFIG_KEYS
    );
    let again = vec![setting("k0".into()), setting("new".into())];
    let kept = budget.within("s", again, &mut skipped);
    assert_eq!(kept, [setting("k0".into())]);
    assert_eq!(
        skipped,
        ["config 'new': source 's' declares more than 1000 keys"]
    );
}

#[test]
fn a_wall_time_that_is_no_time_is_the_readers() {
    assert_eq!(wall_time(Some(5.0), 9.0), 5.0);
    assert_eq!(wall_time(None, 9.0), 9.0);
    assert_eq!(wall_time(Some(f64::NAN), 9.0), 9.0);
    assert_eq!(wall_time(Some(1e300), 9.0), 9.0);
}
