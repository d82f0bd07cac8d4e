//! A Summary event of one `simple_value`, read exactly as
//! `tuneplane.collector.tbevents.simple_scalar` reads it (its regular expression, its head
//! check and its varint), without the tag's name check, which the caller asks Python for.

/// What a simple event holds; `head` is the summary's bytes up to the value.
pub struct Simple<'a> {
    pub head: &'a [u8],
    pub step: i64,
    pub wall_time: f64,
    pub value: f32,
}

/// The event's fields if `data` is a simple event, else None.
pub fn simple(data: &[u8]) -> Option<Simple<'_>> {
    let size = data.len();
    let mut pos = 0;
    let mut wall_time = 0.0;
    if data.first() == Some(&0x09) {
        // `(?:\x09(.{8}))?`: when the first byte is 0x09 nothing else can match it
        let wall: [u8; 8] = data.get(1..9)?.try_into().ok()?;
        wall_time = f64::from_le_bytes(wall);
        pos = 9;
    }
    let mut step = 0;
    if data.get(pos) == Some(&0x10) {
        // `[\x80-\xff]{0,9}[\x00-\x7f]`: the first byte below 0x80 within ten ends the varint
        let rest = &data[pos + 1..];
        let last = rest.iter().take(10).position(|&b| b < 0x80)?;
        step = varint(&rest[..=last])?;
        pos += last + 2;
    }
    // `(\x2a.+\x15)(.{4})` up to the end
    if size < pos + 7 {
        return None;
    }
    let head = &data[pos..size - 4];
    if head[0] != 0x2a || head[head.len() - 1] != 0x15 || !head_checks(head) {
        return None;
    }
    let value = f32::from_le_bytes(data[size - 4..].try_into().ok()?);
    Some(Simple {
        head,
        step,
        wall_time,
        value,
    })
}

/// A head `\x2a L \x0a L \x0a L tag \x15` whose one-byte lengths nest (tbevents._head_tag).
fn head_checks(head: &[u8]) -> bool {
    let Some(size) = head.len().checked_sub(7).filter(|&s| s >= 1) else {
        return false;
    };
    usize::from(head[5]) == size
        && usize::from(head[3]) == size + 7
        && usize::from(head[1]) == size + 9
        && head[2] == 0x0A
        && head[4] == 0x0A
}

/// The tag of a head that checks out, as UTF-8.
pub fn head_tag(head: &[u8]) -> Option<&str> {
    std::str::from_utf8(&head[6..head.len() - 1]).ok()
}

/// A step's varint as int64, None past 64 bits.
fn varint(bytes: &[u8]) -> Option<i64> {
    let mut number: u128 = 0;
    for (index, byte) in bytes.iter().enumerate() {
        number |= u128::from(byte & 0x7F) << (7 * index);
    }
    u64::try_from(number).ok().map(|n| n as i64)
}
