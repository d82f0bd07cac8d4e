//! TFRecord framing with CRC-32C checks, from bytes only (the rules of the Python
//! collector's `tfrecord.scan`): a record not complete yet stops the scan ("not yet"), a
//! bad data CRC skips the record, a bad length CRC loses the framing until the next offset
//! whose header checks out. Nothing in the bytes can panic it: every slice is checked.

pub const HEADER: usize = 12;
pub const FOOTER: usize = 4;
/// A length beyond this with a valid CRC is damage (no real summary is this big).
pub const MAX_RECORD_BYTES: u64 = 512 * 1024 * 1024;
const MASK_DELTA: u32 = 0xA282_EAD8;

pub fn masked_crc(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
        .rotate_right(15)
        .wrapping_add(MASK_DELTA)
}

fn u32_at(buffer: &[u8], pos: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        buffer.get(pos..pos + 4)?.try_into().ok()?,
    ))
}

/// The record length at `pos` if its header checks out.
fn header_at(buffer: &[u8], pos: usize) -> Option<usize> {
    let length_bytes = buffer.get(pos..pos + 8)?;
    let length = u64::from_le_bytes(length_bytes.try_into().ok()?);
    if u32_at(buffer, pos + 8)? != masked_crc(length_bytes) || length > MAX_RECORD_BYTES {
        return None;
    }
    usize::try_from(length).ok()
}

/// One good record: its file offset and where its data lies in the buffer.
#[derive(Debug, PartialEq)]
pub struct Record {
    pub offset: u64,
    pub start: usize,
    pub length: usize,
}

/// A damaged stretch: its file offset and what was done about it.
#[derive(Debug, PartialEq)]
pub struct Damage {
    pub offset: u64,
    pub reason: String,
}

/// What one pass over a buffer found. `consumed` bytes need never be read again; `wanted`
/// is what a record in progress needs in the buffer when it is over the buffer's size.
#[derive(Debug, Default)]
pub struct Scan {
    pub records: Vec<Record>,
    pub damage: Vec<Damage>,
    pub consumed: usize,
    pub wanted: usize,
}

/// Frames the records of `buffer`, which starts at file offset `base`.
pub fn scan(buffer: &[u8], base: u64) -> Scan {
    let size = buffer.len();
    let mut result = Scan::default();
    let mut pos = 0;
    while size - pos >= HEADER {
        let Some(length) = header_at(buffer, pos) else {
            let end = (pos + 1..=size - HEADER)
                .find(|&at| header_at(buffer, at).is_some())
                .unwrap_or(size - HEADER + 1);
            result.damage.push(Damage {
                offset: base + pos as u64,
                reason: format!(
                    "bad record length CRC; skipped {} bytes to resynchronise",
                    end - pos
                ),
            });
            pos = end;
            continue;
        };
        let start = pos + HEADER;
        let end = start + length + FOOTER;
        if end > size {
            result.wanted = end - pos;
            break;
        }
        let data = buffer.get(start..start + length).unwrap_or_default();
        if u32_at(buffer, start + length) == Some(masked_crc(data)) {
            result.records.push(Record {
                offset: base + pos as u64,
                start,
                length,
            });
        } else {
            result.damage.push(Damage {
                offset: base + pos as u64,
                reason: "bad record data CRC; record skipped".to_owned(),
            });
        }
        pos = end;
    }
    result.consumed = pos;
    result
}

/// One TFRecord of `data` (for tests).
#[cfg(test)]
pub fn frame(data: &[u8]) -> Vec<u8> {
    let length = (data.len() as u64).to_le_bytes();
    let mut out = length.to_vec();
    out.extend_from_slice(&masked_crc(&length).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc(data).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_framed_and_a_partial_one_is_waited_for() {
        let mut bytes = [frame(b"one"), frame(b"two")].concat();
        let whole = bytes.len();
        bytes.extend_from_slice(&frame(b"three")[..10]);
        let found = scan(&bytes, 100);
        let offsets: Vec<u64> = found.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![100, 119]);
        assert_eq!(found.consumed, whole);
        assert!(found.damage.is_empty());
    }

    #[test]
    fn damage_is_said_and_passed_over() {
        let mut bad_data = frame(b"data");
        let last = bad_data.len() - 1;
        bad_data[last] ^= 1;
        let bytes = [b"xxxxx".to_vec(), frame(b"good"), bad_data, frame(b"after")].concat();
        let found = scan(&bytes, 0);
        assert_eq!(found.records.len(), 2);
        assert_eq!(
            found.damage,
            vec![
                Damage {
                    offset: 0,
                    reason: "bad record length CRC; skipped 5 bytes to resynchronise".into()
                },
                Damage {
                    offset: 25,
                    reason: "bad record data CRC; record skipped".into()
                },
            ]
        );
    }

    #[test]
    fn any_bytes_scan_without_panicking() {
        let mut seed = 7u64;
        for size in 0..400 {
            let bytes: Vec<u8> = (0..size)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 33) as u8
                })
                .collect();
            let found = scan(&bytes, 0);
            assert!(found.consumed <= bytes.len());
        }
    }
}
