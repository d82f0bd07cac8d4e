//! TFRecord framing with CRC-32C checks, from bytes only: a record not complete yet stops the scan ("not yet"), a
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

/// `scan_into` with a new list of records (for tests).
#[cfg(test)]
pub fn scan(buffer: &[u8], base: u64) -> Scan {
    scan_into(buffer, base, Vec::new())
}

/// Frames the records of `buffer`, which starts at file offset `base`, listing them in
/// `records` (emptied first: a follower's list of ten thousand records a step is not grown
/// afresh each step).
pub fn scan_into(buffer: &[u8], base: u64, mut records: Vec<Record>) -> Scan {
    let size = buffer.len();
    records.clear();
    let mut result = Scan {
        records,
        ..Scan::default()
    };
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

    /// A small deterministic generator: the same cases on every run.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, bound: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % bound.max(1)
        }
    }

    /// Records of 0 to 299 bytes framed one after the other, and each one's (offset, data).
    fn layout(random: &mut Lcg, count: usize) -> (Vec<u8>, Vec<(u64, Vec<u8>)>) {
        let (mut bytes, mut placed) = (Vec::new(), Vec::new());
        for _ in 0..count {
            let data: Vec<u8> = (0..random.below(300))
                .map(|_| random.below(256) as u8)
                .collect();
            placed.push((bytes.len() as u64, data.clone()));
            bytes.extend_from_slice(&frame(&data));
        }
        (bytes, placed)
    }

    /// Scans `bytes` as a reader following a growing file does, the file ending at each of
    /// `cuts` in turn: every scan resumes where the last consumed.
    fn follow(bytes: &[u8], cuts: &[usize]) -> (Vec<(u64, Vec<u8>)>, Vec<Damage>) {
        let (mut records, mut damage, mut offset) = (Vec::new(), Vec::new(), 0usize);
        let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
        ends.sort_unstable();
        ends.push(bytes.len());
        for end in ends {
            let part = &bytes[offset.min(end)..end];
            let found = scan(part, offset as u64);
            for record in &found.records {
                let data = &part[record.start..record.start + record.length];
                records.push((record.offset, data.to_vec()));
            }
            damage.extend(found.damage);
            offset += found.consumed;
        }
        (records, damage)
    }

    #[test]
    fn a_growing_file_yields_every_record_once_in_order() {
        let mut random = Lcg(11);
        for _ in 0..200 {
            let count = 1 + random.below(30);
            let (bytes, placed) = layout(&mut random, count);
            let cuts: Vec<usize> = (0..random.below(8))
                .map(|_| random.below(bytes.len() + 1))
                .collect();
            let (records, damage) = follow(&bytes, &cuts);
            assert_eq!(records, placed, "cut at {cuts:?}");
            assert!(damage.is_empty(), "{damage:?}");
        }
    }

    #[test]
    fn a_truncated_file_yields_exactly_its_complete_records() {
        let mut random = Lcg(5);
        let (bytes, placed) = layout(&mut random, 12);
        for cut in 0..=bytes.len() {
            let found = scan(&bytes[..cut], 0);
            let complete: Vec<u64> = placed
                .iter()
                .filter(|(offset, data)| *offset as usize + frame(data).len() <= cut)
                .map(|(offset, _)| *offset)
                .collect();
            let offsets: Vec<u64> = found.records.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, complete, "cut at {cut}");
            assert!(found.damage.is_empty(), "cut at {cut}: {:?}", found.damage);
        }
    }

    #[test]
    fn bit_flips_never_yield_a_damaged_record_and_a_lost_one_is_said() {
        let mut random = Lcg(3);
        for _ in 0..300 {
            let count = 1 + random.below(20);
            let (mut bytes, placed) = layout(&mut random, count);
            let mut touched = Vec::new();
            for _ in 0..1 + random.below(6) {
                let bit = random.below(bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
                touched.push(bit / 8);
            }
            let cuts: Vec<usize> = (0..random.below(4))
                .map(|_| random.below(bytes.len() + 1))
                .collect();
            let (records, damage) = follow(&bytes, &cuts);
            assert!(
                records.iter().all(|r| placed.contains(r)),
                "a damaged record"
            );
            assert!(records.windows(2).all(|w| w[0].0 < w[1].0), "out of order");
            for (offset, data) in &placed {
                let span = *offset as usize..*offset as usize + frame(data).len();
                let intact = !touched.iter().any(|b| span.contains(b));
                if intact && !records.contains(&(*offset, data.clone())) {
                    // Only a damaged header before it may have swallowed it, and that is said.
                    assert!(!damage.is_empty(), "record at {offset} lost unsaid");
                }
            }
        }
    }

    #[test]
    fn a_bad_length_crc_resynchronises_at_the_next_good_header() {
        let (first, second, third) = (frame(b"first"), frame(b"second"), frame(b"third"));
        let mut bytes = [first.clone(), second.clone(), third].concat();
        bytes[first.len()] ^= 0x01; // the second record's length
        let found = scan(&bytes, 0);
        let offsets: Vec<u64> = found.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, (first.len() + second.len()) as u64]);
        assert_eq!(
            found.damage,
            vec![Damage {
                offset: first.len() as u64,
                reason: format!(
                    "bad record length CRC; skipped {} bytes to resynchronise",
                    second.len()
                ),
            }]
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
