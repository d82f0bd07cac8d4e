//! Hostile JSONL lines, read in time and on a stack that holds them: a line of very many
//! metrics (or a name repeated among them) costs about what its bytes do, and one nested
//! as deep as orjson reads is read, never a stack overflow, while a deeper one is refused.

use super::refusal;
use crate::sources::jsonl::plain::FEW_METRICS;
use crate::sources::jsonl::{parse_line, MAX_NESTING};

/// A line of `count` metrics named m0, m1, ..., the last one named again if `repeat`.
fn many_metrics(count: usize, repeat: bool) -> Vec<u8> {
    let mut names: Vec<String> = (0..count).map(|i| format!("\"m{i}\": {i}")).collect();
    if repeat {
        names.push(format!("\"m{}\": -1", count - 1));
    }
    format!(
        r#"{{"step": 1, "wall_time": 1, "metrics": {{{}}}}}"#,
        names.join(", ")
    )
    .into_bytes()
}

/// The least of three readings' seconds of a line of `count` metrics, its last name
/// repeated (what a hostile writer sends).
fn read_seconds(count: usize) -> f64 {
    let line = many_metrics(count, true);
    (0..3)
        .map(|_| {
            let started = std::time::Instant::now();
            let read = parse_line(&line).map(|l| (l.metrics.len(), l.metrics.last().map(|m| m.1)));
            assert_eq!(read, Ok((count, Some(-1.0))));
            started.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn a_line_of_very_many_metrics_is_read_in_linear_time() {
    // 200 000 names compared pair by pair were 2e10 comparisons (minutes); a hostile
    // line must cost about what its bytes do. Judged by how the time grows, not by a
    // clock limit a loaded machine could pass: 8 times the names take about 8 times as
    // long when linear, 64 times when quadratic. The least of three readings each.
    let line = parse_line(&many_metrics(200_000, false));
    assert_eq!(line.map(|l| l.metrics.len()), Ok(200_000));
    let (few, many) = (read_seconds(10_000), read_seconds(80_000));
    assert!(
        many / few < 24.0,
        "{few:.4} s for 10,000 names, {many:.4} s for 80,000"
    );
}

#[test]
fn a_repeated_name_is_read_as_python_reads_it_however_many_names() {
    for count in [2, FEW_METRICS - 1, FEW_METRICS, FEW_METRICS + 1, 40] {
        let got = parse_line(&many_metrics(count, true)).map(|l| {
            let last = l.metrics.last().cloned();
            (l.metrics.len(), last)
        });
        assert_eq!(got, Ok((count, Some((format!("m{}", count - 1), -1.0)))));
    }
}

fn nested(depth: usize, inner: &str) -> Vec<u8> {
    format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
}

#[test]
fn a_line_nested_as_deep_as_orjson_reads_is_read() {
    // orjson reads 1024 levels; serde_json stopped at 128.
    for (depth, bare) in [(126, ""), (127, "NaN"), (200, "NaN"), (MAX_NESTING - 1, "")] {
        let deep = nested(depth, r#""x\"]]""#);
        let line = [
            br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1"#.as_slice(),
            if bare.is_empty() {
                b""
            } else {
                br#", "y": NaN"#
            },
            br#"}, "deep": "#,
            &deep,
            b"}",
        ]
        .concat();
        let got = parse_line(&line).map(|l| l.metrics.len());
        assert_eq!(got, Ok(if bare.is_empty() { 1 } else { 2 }), "{depth}");
    }
    let mut step = br#"{"wall_time": 1, "metrics": {"x": 1}, "step": "#.to_vec();
    step.extend_from_slice(&nested(600, "1"));
    step.push(b'}');
    let said = refusal(&String::from_utf8_lossy(&step));
    let shown = format!("{}1{}", "[".repeat(600), "]".repeat(600));
    assert_eq!(
        said,
        format!("'step' must be a 64-bit integer, got {shown}")
    );
}

#[test]
fn a_line_nested_deeper_than_orjson_reads_is_refused() {
    let mut line = br#"{"step": 1, "wall_time": 1, "metrics": {"x": NaN}, "deep": "#.to_vec();
    line.extend_from_slice(&nested(100_000, ""));
    line.push(b'}');
    assert_eq!(
        refusal(&String::from_utf8_lossy(&line)),
        "not JSON: arrays and objects nested 100001 deep, over 1024"
    );
    assert!(refusal(&"[".repeat(2000)).starts_with("not JSON: "));
    // The fast path skips what it ignores without recursing: a plain line is read.
    let mut plain = br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1}, "deep": "#.to_vec();
    plain.extend_from_slice(&nested(100_000, ""));
    plain.push(b'}');
    assert_eq!(parse_line(&plain).map(|l| l.metrics.len()), Ok(1));
}
