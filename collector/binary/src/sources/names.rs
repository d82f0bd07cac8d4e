//! What may be a name (a metric's, a tag's): the rule the services check batches by
//! (`tuneplane.telemetry.v1.validation.name_problem`), asked before a line's metrics are kept.

use crate::contract::MAX_RUN_PATH_BYTES;
use crate::sources::repr::py_str;

/// A name's bound in UTF-8 bytes (`limits.MAX_NAME_BYTES`).
pub const MAX_NAME_BYTES: usize = 512;

/// Why `value` cannot be a name, or `None`.
pub fn name_problem(value: &str) -> Option<String> {
    name_problem_within(value, MAX_NAME_BYTES)
}

fn name_problem_within(value: &str, limit: usize) -> Option<String> {
    // Every name read (one per point) is looked at: a good one costs a scan of its bytes and
    // nothing else. A control character is one byte in UTF-8, and no byte of a longer
    // character is below 0x80.
    let clean = |b: &u8| *b > 0x1f && *b != 0x7f;
    if !value.is_empty() && value.len() <= limit && value.as_bytes().iter().all(clean) {
        return None;
    }
    if value.is_empty() {
        return Some("is empty".to_owned());
    }
    let head: String = value.chars().take(40).collect();
    if value.len() > limit {
        return Some(format!(
            "is {} bytes, over the {limit} byte bound: {}...",
            value.len(),
            py_str(&head)
        ));
    }
    let control = value
        .chars()
        .enumerate()
        .find(|(_, c)| matches!(*c, '\u{0}'..='\u{1f}' | '\u{7f}'));
    control.map(|(at, c)| {
        format!(
            "holds the control character {} at {at}: {}",
            py_str(&c.to_string()),
            py_str(&head)
        )
    })
}

/// `message` cut after 300 characters: what it quotes (a record, an artifact's value) may be
/// anything, and a log line is no place for megabytes.
pub fn bounded(message: String) -> String {
    const MOST: usize = 300;
    match message.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}...", &message[..at]),
        None => message,
    }
}

/// What an identifier that names a path component is (runs, members, sources, channels).
pub const NAME_RULE: &str = "1-128 of A-Z a-z 0-9 . _ - (starting with a letter or digit)";

/// Whether `value` keeps `NAME_RULE`: safe as one path component (a spool directory).
pub fn is_identifier(value: &str) -> bool {
    let bytes = value.as_bytes();
    (1..=128).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Why `value` cannot be a series' run path (a TensorBoard run: an event file's directory
/// below its log directory, '/'-separated, empty for the log directory itself), or `None`.
pub fn run_path_problem(value: &str) -> Option<String> {
    relative_path_problem(value, MAX_RUN_PATH_BYTES)
}

/// Why `value` cannot be a relative path of names within `limit` bytes (a run path, the file
/// of a source position), or `None`; the empty path is the root.
pub fn relative_path_problem(value: &str, limit: usize) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if let Some(problem) = name_problem_within(value, limit) {
        return Some(problem);
    }
    let head: String = value.chars().take(40).collect();
    if value.starts_with('/') {
        return Some(format!(
            "starts with '/' (it is relative to the log directory): {}",
            py_str(&head)
        ));
    }
    if value.split('/').any(|part| matches!(part, "" | "." | "..")) {
        return Some(format!(
            "has an empty, '.' or '..' segment: {}",
            py_str(&head)
        ));
    }
    None
}

/// `value` with each control character written as `\xNN`: for what only describes a
/// record (a file's path), never for what identifies one.
pub fn escape_controls(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}') {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass() {
        assert_eq!(name_problem("train/loss"), None);
        assert_eq!(name_problem("損失"), None);
        assert_eq!(name_problem(&"x".repeat(512)), None);
    }

    #[test]
    fn empty_long_and_control_names_are_refused() {
        assert_eq!(name_problem("").as_deref(), Some("is empty"));
        let long = name_problem(&"y".repeat(513)).unwrap_or_default();
        assert!(long.starts_with("is 513 bytes, over the 512 byte bound: 'yyyy"));
        assert_eq!(
            name_problem("a\tb").as_deref(),
            Some("holds the control character '\\t' at 1: 'a\\tb'")
        );
    }

    #[test]
    fn run_paths_are_relative_and_plain() {
        assert_eq!(run_path_problem(""), None);
        assert_eq!(run_path_problem("eval/fold_1"), None);
        assert!(run_path_problem("/abs").is_some_and(|p| p.starts_with("starts with '/'")));
        assert!(run_path_problem("a//b").is_some_and(|p| p.contains("'..' segment")));
        assert!(run_path_problem("a/../b").is_some());
        assert_eq!(escape_controls("a\nb\x7f"), "a\\x0ab\\x7f");
    }
}
