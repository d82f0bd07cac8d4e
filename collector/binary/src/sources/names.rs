//! What may be a name (a metric's, a tag's): the rule the services check batches by
//! (`tuneplane.telemetry.v1.validation.name_problem`), asked before a line's metrics are kept.

use crate::sources::repr::py_str;

/// A name's bound in UTF-8 bytes (`limits.MAX_NAME_BYTES`).
pub const MAX_NAME_BYTES: usize = 512;

/// Why `value` cannot be a name, or `None`.
pub fn name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("is empty".to_owned());
    }
    let head: String = value.chars().take(40).collect();
    if value.len() > MAX_NAME_BYTES {
        return Some(format!(
            "is {} bytes, over the {MAX_NAME_BYTES} byte bound: {}...",
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
}
