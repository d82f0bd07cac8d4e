//! The event nearly every scalar is written as: one step's one `simple_value` (PyTorch's
//! `SummaryWriter.add_scalar`, tensorboardX, TF1 summaries), read straight from its wire
//! bytes with no allocation. Anything else, or anything laid out otherwise (a field twice, an
//! unknown field, metadata, a node name, a second value), is not this event: it is left to
//! the full decoder, which reads it as TensorBoard does.

use super::wire::varint;

/// One scalar event: its step, wall time, tag (a view of the record) and value.
#[derive(Debug, PartialEq)]
pub struct Simple<'a> {
    pub step: i64,
    pub wall_time: f64,
    pub tag: &'a str,
    pub value: f32,
}

/// `N` bytes at `data[*at..]`, advancing `at`.
fn fixed<const N: usize>(data: &[u8], at: &mut usize) -> Option<[u8; N]> {
    let end = at.checked_add(N).filter(|&end| end <= data.len())?;
    let bytes = data[*at..end].try_into().ok()?;
    *at = end;
    Some(bytes)
}

/// A length-delimited field's body at `data[*at..]`, advancing `at`.
fn delimited<'a>(data: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let length = usize::try_from(varint(data, at)?).ok()?;
    let end = at.checked_add(length).filter(|&end| end <= data.len())?;
    let body = &data[*at..end];
    *at = end;
    Some(body)
}

/// The event in `data` if it is exactly `Event{wall_time?, step?, summary{value{tag,
/// simple_value}}}`, each field at most once and the tag not empty; else None.
pub fn simple(data: &[u8]) -> Option<Simple<'_>> {
    let (mut wall_time, mut step, mut summary) = (None, None, None);
    let mut at = 0;
    while at < data.len() {
        match varint(data, &mut at)? {
            0x09 if wall_time.is_none() => {
                wall_time = Some(f64::from_le_bytes(fixed(data, &mut at)?))
            }
            0x10 if step.is_none() => step = Some(varint(data, &mut at)? as i64),
            0x2a if summary.is_none() => summary = Some(delimited(data, &mut at)?),
            _ => return None,
        }
    }
    let summary = summary?;
    let mut at = 0;
    if varint(summary, &mut at)? != 0x0a {
        return None;
    }
    let value = delimited(summary, &mut at)?;
    if at != summary.len() {
        return None;
    }
    let (mut tag, mut simple) = (None, None);
    let mut at = 0;
    while at < value.len() {
        match varint(value, &mut at)? {
            0x0a if tag.is_none() => {
                tag = Some(std::str::from_utf8(delimited(value, &mut at)?).ok()?)
            }
            0x15 if simple.is_none() => simple = Some(f32::from_le_bytes(fixed(value, &mut at)?)),
            _ => return None,
        }
    }
    Some(Simple {
        step: step.unwrap_or(0),
        wall_time: wall_time.unwrap_or(0.0),
        tag: tag.filter(|t| !t.is_empty())?,
        value: simple?,
    })
}

#[cfg(test)]
mod tests;
