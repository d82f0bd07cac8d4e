//! Allocations kept from one round of following to the next: a follower reads and sends a
//! batch a second, and buffers grown afresh each time are pages mapped, faulted in and
//! unmapped each time (musl maps each allocation over 128 KiB on its own).

use prost::bytes::Bytes;

use crate::collect::draft::Spare;
use crate::collect::ReadStep;
use crate::sources::tensorboard::framing::Record;

/// `bytes`'s allocation, emptied, if nothing else holds a view of it.
pub fn reclaimed(bytes: Bytes) -> Option<Vec<u8>> {
    let mut bytes = bytes.try_into_mut().ok()?;
    // Emptied before it is turned back into a Vec, which would copy what it holds onto the
    // start of its allocation (onto itself, backwards, when it is already there).
    bytes.clear();
    Some(bytes.into())
}

/// What a read step allocates, kept for the next.
#[derive(Debug, Default)]
pub struct Kept {
    /// The bytes read (a TensorBoard step's records are views of them until sealed).
    bytes: Vec<u8>,
    /// An event file's records framed in them.
    pub records: Vec<Record>,
    /// The columns of the last batch sealed.
    pub columns: Spare,
}

/// The most of a read buffer kept between steps (a batch of 20,000 scalars is read in less).
const KEPT_BYTES: usize = 2 << 20;

impl Kept {
    /// The read buffer, emptied.
    pub fn take_bytes(&mut self) -> Vec<u8> {
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.clear();
        bytes
    }

    /// Gives the read buffer back (one grown past `KEPT_BYTES` for a large record is let go).
    pub fn keep_bytes(&mut self, bytes: Vec<u8>) {
        if bytes.capacity() <= KEPT_BYTES {
            self.bytes = bytes;
        }
    }

    /// Takes back what a step used, once its batch is sealed or counted: its draft's
    /// columns, and the buffer its records were `read` into (the step, whose rich records
    /// may be views of that buffer, is let go first).
    pub fn keep_step(&mut self, mut step: ReadStep, read: Bytes) {
        self.columns = step.draft.take_spare();
        drop(step);
        if let Some(bytes) = reclaimed(read) {
            self.keep_bytes(bytes);
        }
    }
}
