//! TFRecord framing with CRC-32C checks, exactly as `tuneplane.collector.tfrecord.scan`:
//! a record not complete yet stops the scan ("not yet"), a bad data CRC skips the record,
//! a bad length CRC loses the framing until the next offset whose header checks out.

pub const HEADER: usize = 12;
pub const FOOTER: usize = 4;
/// A length beyond this with a valid CRC is damage (tfrecord.MAX_RECORD_BYTES).
pub const MAX_RECORD_BYTES: u64 = 512 * 1024 * 1024;
const MASK_DELTA: u32 = 0xA282_EAD8;

pub fn masked_crc(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
        .rotate_right(15)
        .wrapping_add(MASK_DELTA)
}

fn u32_at(buffer: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(buffer[pos..pos + 4].try_into().expect("four bytes"))
}

/// The record length at `pos` if its header checks out.
fn header_at(buffer: &[u8], pos: usize) -> Option<usize> {
    let length = u64::from_le_bytes(buffer[pos..pos + 8].try_into().expect("eight bytes"));
    if u32_at(buffer, pos + 8) != masked_crc(&buffer[pos..pos + 8]) || length > MAX_RECORD_BYTES {
        return None;
    }
    Some(length as usize)
}

/// The first offset after `start` whose header checks out, if any in the buffer.
fn resync(buffer: &[u8], start: usize) -> Option<usize> {
    (start + 1..=buffer.len() - HEADER).find(|&pos| header_at(buffer, pos).is_some())
}

/// One good record: where it starts in the buffer, and its data.
pub struct Record {
    pub pos: usize,
    pub start: usize,
    pub length: usize,
}

/// A damaged stretch: where, and the bytes skipped to resynchronise (None: a bad data CRC,
/// the record skipped).
pub struct Damage {
    pub pos: usize,
    pub skipped: Option<usize>,
}

#[derive(Default)]
pub struct Scan {
    pub records: Vec<Record>,
    pub damage: Vec<Damage>,
    pub consumed: usize,
    pub wanted: usize,
}

/// Frame the records of `buffer`, stopping after `limit` good records if given.
pub fn scan(buffer: &[u8], limit: Option<usize>) -> Scan {
    let size = buffer.len();
    let wanted = limit.unwrap_or(size);
    let mut result = Scan::default();
    let mut last_header: Option<([u8; HEADER], usize)> = None; // records of a tag repeat lengths
    let mut pos = 0;
    while size - pos >= HEADER && result.records.len() < wanted {
        let header: [u8; HEADER] = buffer[pos..pos + HEADER].try_into().expect("a header");
        let length = match last_header {
            Some((seen, length)) if seen == header => Some(length),
            _ => header_at(buffer, pos),
        };
        let Some(length) = length else {
            let end = resync(buffer, pos).unwrap_or(size - HEADER + 1);
            result.damage.push(Damage {
                pos,
                skipped: Some(end - pos),
            });
            pos = end;
            continue;
        };
        last_header = Some((header, length));
        let start = pos + HEADER;
        let end = start + length + FOOTER;
        if end > size {
            result.wanted = end - pos;
            break;
        }
        if u32_at(buffer, start + length) == masked_crc(&buffer[start..start + length]) {
            result.records.push(Record { pos, start, length });
        } else {
            result.damage.push(Damage { pos, skipped: None });
        }
        pos = end;
    }
    result.consumed = pos;
    result
}
