//! Values written as Python's `repr` writes them, so the collector's messages read as the
//! services' do: `'step' must be a 64-bit integer, got 1.5`.

use serde_json::Value;

/// A string as Python's `repr`: single quotes unless it holds one and no double quote.
pub fn py_str(value: &str) -> String {
    let quote = if value.contains('\'') && !value.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(value.len() + 2);
    out.push(quote);
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A decoded JSON value as Python's `repr` of what `json.loads` gives.
pub fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() => py_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => py_str(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), py_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

/// A float as Python's `repr`: `1.0`, `1.5`, `1e+20`, `nan`, `inf`.
pub fn py_float(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let exponent = if value == 0.0 {
        0
    } else {
        value.abs().log10().floor() as i32
    };
    if (-4..16).contains(&exponent) {
        let shortest = format!("{value}");
        if shortest.contains('.') || shortest.contains('e') {
            shortest
        } else {
            format!("{shortest}.0")
        }
    } else {
        let formatted = format!("{value:e}");
        let (mantissa, power) = formatted.split_once('e').unwrap_or((&formatted, "0"));
        let power: i32 = power.parse().unwrap_or(0);
        format!(
            "{mantissa}e{}{:02}",
            if power < 0 { '-' } else { '+' },
            power.abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_floats_read_as_python_writes_them() {
        assert_eq!(py_str("loss"), "'loss'");
        assert_eq!(py_str("it's"), "\"it's\"");
        assert_eq!(py_str("a\u{1}"), "'a\\x01'");
        assert_eq!(py_float(1.5), "1.5");
        assert_eq!(py_float(2.0), "2.0");
        assert_eq!(py_float(1e20), "1e+20");
        assert_eq!(py_float(3e-5), "3e-05");
        assert_eq!(py_float(0.0003), "0.0003");
    }

    #[test]
    fn json_values_read_as_python_writes_them() {
        let value: Value =
            serde_json::from_str(r#"[null, true, 1, 1.5, "x", {"a": 2}]"#).unwrap_or(Value::Null);
        assert_eq!(py_repr(&value), "[None, True, 1, 1.5, 'x', {'a': 2}]");
    }
}
