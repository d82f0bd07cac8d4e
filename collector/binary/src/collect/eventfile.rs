//! An event file's records read from disk: a read's worth framed at a time, and a record
//! larger than a read (up to `MAX_RECORD_BYTES`) read whole when the file holds it whole.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use crate::sources::tensorboard::framing::{scan_into, Record, Scan};

/// One read's worth of an event file.
pub const READ_BYTES: u64 = 8 * 1024 * 1024;

/// Reads up to `limit` bytes from `file` at `offset` into `buffer` (emptied first; its
/// allocation is kept, so a follower reading step after step does not map fresh pages).
fn read_at(file: &mut File, offset: u64, limit: u64, mut buffer: Vec<u8>) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))?;
    buffer.clear();
    file.take(limit).read_to_end(&mut buffer)?;
    Ok(buffer)
}

/// `first` bytes (at most a read's worth) from `offset` framed, or one record larger than
/// that (of at most `max_record` bytes framed: a larger one is never read, its `wanted`
/// says how long it is), read into `buffer` and listed in `records` (both emptied first, their
/// allocations kept): the buffer, what the scan found in it, and how many bytes from `offset`
/// it looked at.
pub fn frame_at(
    file: &mut File,
    offset: u64,
    first: u64,
    max_record: u64,
    buffer: Vec<u8>,
    records: Vec<Record>,
) -> io::Result<(Vec<u8>, Scan, usize)> {
    let mut buffer = read_at(file, offset, first.min(READ_BYTES), buffer)?;
    let found = scan_into(&buffer, offset, records);
    let covered = buffer.len();
    if found.wanted > buffer.len() - found.consumed && found.wanted as u64 <= max_record {
        // A larger record (up to MAX_RECORD_BYTES) is read only when the file holds it
        // whole, and onto the bytes before it in place: one buffer of its size, never a
        // second copy beside it.
        let start = offset + found.consumed as u64;
        let wanted = found.wanted as u64;
        if file.metadata()?.len().saturating_sub(start) >= wanted {
            buffer.truncate(found.consumed);
            buffer
                .try_reserve_exact(found.wanted)
                .map_err(io::Error::other)?;
            file.seek(SeekFrom::Start(start))?;
            (&mut *file).take(wanted).read_to_end(&mut buffer)?;
            if buffer.len() == found.consumed + found.wanted {
                let (found, covered) = (scan_into(&buffer, offset, found.records), buffer.len());
                return Ok((buffer, found, covered));
            }
            // The file shrank meanwhile: the records found before the large one stand.
        }
    }
    Ok((buffer, found, covered))
}
