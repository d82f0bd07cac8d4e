//! An event's protobuf wire read without decoding it: how many `Summary.Value`s it holds
//! (so a record of millions of tiny values is refused before it is decoded into millions of
//! messages), and each value's bytes as written (the bytes rich records keep).

use prost::bytes::Bytes;
use prost::Message;

/// Most values one event's summary may hold to be decoded: more than a batch can take.
pub const MAX_SUMMARY_VALUES: usize = crate::contract::MAX_BATCH_POINTS;

/// A varint at `data[*at..]`, advancing `at`; None when it is cut short or too long.
/// (As protobuf reads one: its tenth byte holds only the top bit, higher bits are refused.)
pub(super) fn varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*at)?;
        *at += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// Each field of a message as (field number, its bytes when length-delimited); stops at
/// the first malformed field (decoding says what is wrong with it).
fn fields(data: &[u8]) -> impl Iterator<Item = (u64, Option<&[u8]>)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let key = varint(data, &mut at)?;
        let body = match key & 7 {
            0 => varint(data, &mut at).map(|_| None)?,
            1 => {
                at = at.checked_add(8).filter(|&end| end <= data.len())?;
                None
            }
            2 => {
                let length = usize::try_from(varint(data, &mut at)?).ok()?;
                let end = at.checked_add(length).filter(|&end| end <= data.len())?;
                let body = &data[at..end];
                at = end;
                Some(body)
            }
            5 => {
                at = at.checked_add(4).filter(|&end| end <= data.len())?;
                None
            }
            _ => return None,
        };
        Some((key >> 3, body))
    })
}

/// How many `Summary.Value`s the event in `data` holds (its summary may come in pieces).
pub fn summary_values(data: &[u8]) -> usize {
    fields(data)
        .filter_map(|(number, body)| body.filter(|_| number == 5))
        .map(|summary| fields(summary).filter(|(number, _)| *number == 1).count())
        .sum()
}

/// An event with its summary left as written.
#[derive(Clone, PartialEq, Message)]
struct WrittenEvent {
    #[prost(bytes = "bytes", optional, tag = "5")]
    summary: Option<Bytes>,
}

#[derive(Clone, PartialEq, Message)]
struct WrittenSummary {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    value: Vec<Bytes>,
}

/// Each `Summary.Value` of the event in `data` as written (views of `data`, not copies),
/// if they line up with the `count` values decoded (a summary written in two pieces does
/// not: its values are then encoded again).
pub fn raw_values(data: Bytes, count: usize) -> Option<Vec<Bytes>> {
    let summary = WrittenEvent::decode(data).ok()?.summary?;
    let values = WrittenSummary::decode(summary).ok()?.value;
    (values.len() == count).then_some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_on_the_wire() {
        // step 7, then a summary of three empty values, then one more summary of one.
        let mut event = vec![0x10, 7, 0x2a, 6, 0x0a, 0, 0x0a, 0, 0x0a, 0];
        event.extend_from_slice(&[0x2a, 2, 0x0a, 0]);
        assert_eq!(summary_values(&event), 4);
        assert_eq!(
            summary_values(&[0x2a, 200, 0x0a]),
            0,
            "cut short: decoding says why"
        );
    }
}
