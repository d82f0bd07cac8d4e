//! `parse_line`: what it gives and says of a line: its columns, its non-finite values bare
//! or quoted, and each refusal worded as Python would word it. Hostile
//! lines (very many metrics, deep nesting) are in `hostile`, config records in `config`.

use super::*;

mod config;
mod hostile;

fn refusal(raw: &str) -> String {
    parse_line(raw.as_bytes())
        .err()
        .map(|e| e.0)
        .unwrap_or_default()
}

#[test]
fn a_line_gives_its_step_wall_time_and_metrics_in_order() {
    let line = parse_line(br#"{"step": 3, "wall_time": 10.5, "metrics": {"z": 0.25, "a": 2}}"#);
    assert_eq!(
        line,
        Ok(Line {
            step: 3,
            wall_time: Some(10.5),
            metrics: vec![("z".into(), 0.25), ("a".into(), 2.0)],
            ..Line::default()
        })
    );
}

#[test]
fn a_line_without_a_wall_time_or_with_null_gives_none() {
    for raw in [
        r#"{"step": 1, "metrics": {"x": 1}}"#,
        r#"{"step": 1, "wall_time": null, "metrics": {"x": 1}}"#,
        r#"{"metrics": {"x": 1}, "wall_time": null, "step": 1, "other": [1]}"#,
    ] {
        let line = parse_line(raw.as_bytes()).unwrap();
        assert_eq!((line.step, line.wall_time), (1, None), "{raw}");
    }
}

#[test]
fn non_finite_values_are_kept_bare_or_quoted() {
    for (raw, want) in [
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"x": NaN}}"#,
            f64::NAN,
        ),
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"x": -Infinity}}"#,
            f64::NEG_INFINITY,
        ),
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"x": "inf"}}"#,
            f64::INFINITY,
        ),
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"x": "NaN", "y": 1}}"#,
            f64::NAN,
        ),
    ] {
        let got = parse_line(raw.as_bytes()).map(|l| l.metrics[0].1);
        assert!(
            matches!(got, Ok(v) if v == want || (v.is_nan() && want.is_nan())),
            "{raw}"
        );
    }
    let quoted = r#"{"step": 1, "wall_time": 1, "metrics": {"NaN here": 1, "s": "a NaN"}}"#;
    assert_eq!(refusal(quoted), "metric 's' is 'a NaN', not a number");
}

#[test]
fn malformed_lines_are_refused_with_a_reason() {
    assert!(refusal("garbage").starts_with("not JSON: "));
    assert_eq!(refusal("[1, 2]"), "not a JSON object");
    assert_eq!(
        refusal(r#"{"step": 1.5, "wall_time": 1, "metrics": {"x": 1}}"#),
        "'step' must be a 64-bit integer, got 1.5"
    );
    assert!(
        refusal(r#"{"step": 9223372036854775808, "wall_time": 1, "metrics": {"x": 1}}"#)
            .starts_with("'step' must be a 64-bit integer")
    );
    assert_eq!(
        refusal(r#"{"step": true, "wall_time": 1, "metrics": {"x": 1}}"#),
        "'step' must be a 64-bit integer, got True"
    );
    assert_eq!(
        refusal(r#"{"step": 1, "wall_time": "soon", "metrics": {"x": 1}}"#),
        "'wall_time' must be a number of seconds, got 'soon'"
    );
    assert_eq!(
        refusal(r#"{"step": 1, "wall_time": 1, "metrics": {}}"#),
        "'metrics' must be a non-empty object of name: number"
    );
    assert_eq!(
        refusal(r#"{"step": 1, "wall_time": 1, "metrics": {"x": null}}"#),
        "metric 'x' is null, not a number"
    );
    assert_eq!(
        refusal(r#"{"step": 1, "wall_time": 1, "metrics": {"x": [1]}}"#),
        "metric 'x' is [1], not a number"
    );
    assert_eq!(
        refusal(r#"{"step": 1, "wall_time": 1, "metrics": {"": 1}}"#),
        "metric name is empty"
    );
}

#[test]
fn bare_tokens_are_shown_as_python_shows_them_and_no_string_reads_as_one() {
    // What is said of each.
    for (raw, said) in [
        (
            r#"{"step": NaN, "wall_time": 1, "metrics": {"x": 1}}"#,
            "'step' must be a 64-bit integer, got nan",
        ),
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"x": [NaN, -Infinity, {"a": Infinity}]}}"#,
            "metric 'x' is [nan, -inf, {'a': inf}], not a number",
        ),
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"x": "\u0000NaN"}}"#,
            "metric 'x' is '\\x00NaN', not a number",
        ),
        (
            r#"{"step": 1, "wall_time": 1, "metrics": {"y": NaN, "x": "\u0000NaN"}}"#,
            "metric 'x' is '\\x00NaN', not a number",
        ),
        (
            r#"{"step": 1, "wall_time": "\u0000Infinity", "metrics": {"x": 1}}"#,
            "'wall_time' must be a number of seconds, got '\\x00Infinity'",
        ),
        (
            r#"{"step": 1, "wall_time": "\u0000Infinity", "metrics": {"x": NaN}}"#,
            "'wall_time' must be a number of seconds, got '\\x00Infinity'",
        ),
        (
            r#"{"step": [NaN, "\u0000NaN"], "wall_time": 1, "metrics": {"x": NaN}}"#,
            "'step' must be a 64-bit integer, got [nan, '\\x00NaN']",
        ),
    ] {
        assert_eq!(refusal(raw), said, "{raw}");
    }
    let key = refusal(r#"{"step": 1, "wall_time": 1, "metrics": {NaN: 1}}"#);
    assert!(key.starts_with("not JSON: "), "{key}");
    let both =
        parse_line(br#"{"step": 1, "wall_time": NaN, "metrics": {"x": NaN, "s": "\u0000"}}"#);
    assert!(both.is_err());
    let fine = parse_line(br#"{"step": 1, "wall_time": -Infinity, "metrics": {"\u0000x": NaN}}"#);
    assert!(
        fine.is_err(),
        "a control character in a name is refused either way"
    );
    let read = parse_line(br#"{"step": 1, "wall_time": -Infinity, "metrics": {"x": NaN, "y": 2}}"#)
        .map(|l| (l.wall_time, l.metrics.len(), l.metrics[0].1.is_nan()));
    assert_eq!(read, Ok((Some(f64::NEG_INFINITY), 2, true)));
}

#[test]
fn blank_lines_are_python_blank() {
    assert!(is_blank(b" \t\r\x0b\x0c"));
    assert!(!is_blank(b" x "));
}
