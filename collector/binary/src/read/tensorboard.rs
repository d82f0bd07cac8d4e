//! `read` of a TensorBoard log directory or event file: each file framed and decoded from
//! its start, a run's files in name order sharing what TensorBoard purges by.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use prost::bytes::Bytes;
use serde::Serialize;
use serde_json::json;

use super::{emit, open_regular, JsonNumber};
use crate::logdir;
use crate::sources::tensorboard::events::{decode, Plugins, PurgeState};
use crate::sources::tensorboard::framing::{scan, Scan};

/// A scalar of an event, as `read` prints it (the hot path: no map built per record).
#[derive(Serialize)]
struct EventScalar<'a> {
    kind: &'static str,
    file: &'a str,
    offset: u64,
    tag: &'a str,
    step: i64,
    wall_time: f64,
    value: JsonNumber,
}

/// One read's worth of an event file.
const READ_BYTES: u64 = 8 * 1024 * 1024;

/// Reads up to `limit` bytes from `file` at `offset`.
fn read_at(file: &mut File, offset: u64, limit: u64) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buffer = Vec::new();
    file.take(limit).read_to_end(&mut buffer)?;
    Ok(buffer)
}

/// A read's worth from `offset` framed (or one record larger than that): the buffer's
/// bytes, what the scan found in them, and how many bytes from `offset` it looked at.
fn frame_at(file: &mut File, offset: u64) -> io::Result<(Vec<u8>, Scan, usize)> {
    let mut buffer = read_at(file, offset, READ_BYTES)?;
    let found = scan(&buffer, offset);
    let covered = buffer.len();
    if found.wanted > buffer.len() - found.consumed {
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
                let (found, covered) = (scan(&buffer, offset), buffer.len());
                return Ok((buffer, found, covered));
            }
            // The file shrank meanwhile: the records found before the large one stand.
        }
    }
    Ok((buffer, found, covered))
}

/// Reads the event file at `path`; `Ok(false)` when it could not be opened (said).
fn file_records(
    path: &Path,
    relative: &str,
    state: &mut PurgeState,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<bool> {
    let mut file = match open_regular(path) {
        Ok(Some(file)) => file,
        Ok(None) => {
            writeln!(problems, "{relative}: not a regular file; not read")?;
            return Ok(true);
        }
        // A link to nowhere, a file the reader may not open: the run's other files are
        // still read.
        Err(e) => {
            writeln!(problems, "{relative}: cannot be opened: {e}; not read")?;
            return Ok(false);
        }
    };
    let mut plugins = Plugins::new();
    let mut offset = 0u64;
    loop {
        let (buffer, found, covered) = frame_at(&mut file, offset)?;
        for damage in &found.damage {
            writeln!(problems, "{relative}@{}: {}", damage.offset, damage.reason)?;
        }
        // Records are decoded from views of the buffer: their large fields are not copied.
        let whole = Bytes::from(buffer);
        for record in &found.records {
            let end = record.start.saturating_add(record.length);
            let data = if record.start <= end && end <= whole.len() {
                whole.slice(record.start..end)
            } else {
                Bytes::new()
            };
            let event = decode(data, relative, record.offset, &mut plugins, state);
            for problem in &event.problems {
                writeln!(problems, "{problem}")?;
            }
            let (at, step, wall) = (record.offset, event.step, event.wall_time);
            for (tag, value) in &event.scalars {
                let value = JsonNumber::of(*value);
                let scalar = EventScalar {
                    kind: "scalar",
                    file: relative,
                    offset: at,
                    tag,
                    step,
                    wall_time: wall,
                    value,
                };
                emit(out, &scalar)?;
            }
            for rich in &event.rich {
                emit(
                    out,
                    &json!({"kind": rich.kind.name(), "file": relative, "offset": at,
                                  "tag": rich.tag, "step": step, "wall_time": wall,
                                  "plugin": rich.plugin, "bytes": rich.bytes}),
                )?;
            }
            for marker in &event.markers {
                let record = if marker.tags.is_empty() {
                    json!({"kind": "session_start", "file": relative, "offset": at,
                           "step": step, "wall_time": wall})
                } else {
                    json!({"kind": "out_of_order_step", "tags": marker.tags, "file": relative,
                           "offset": at, "step": step, "wall_time": wall})
                };
                emit(out, &record)?;
            }
        }
        if found.consumed == 0 {
            if covered > 0 {
                writeln!(
                    problems,
                    "{relative}@{offset}: incomplete last record ({covered} bytes); not read"
                )?;
            }
            return Ok(true);
        }
        offset += found.consumed as u64;
    }
}

/// Writes the records of the log directory or event file `root`.
pub fn records(
    root: &Path,
    shown_root: &str,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    let listing = logdir::event_files(root);
    for problem in &listing.problems {
        writeln!(problems, "{problem}")?;
    }
    if listing.files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{shown_root}: no *tfevents* files"),
        ));
    }
    // A run's files are read in name order, as TensorBoard reads them.
    let mut runs: HashMap<String, PurgeState> = HashMap::new();
    let mut unopened = 0usize;
    for path in &listing.files {
        let relative = match path.strip_prefix(root) {
            Ok(below) if path != root => below.to_string_lossy().into_owned(),
            _ => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let run = relative
            .rsplit_once('/')
            .map(|(run, _)| run.to_owned())
            .unwrap_or_default();
        let state = runs.entry(run).or_default();
        unopened += usize::from(!file_records(path, &relative, state, out, problems)?);
    }
    // Said file by file above; the path still counts as not read whole (exit status 1).
    match unopened {
        0 => Ok(()),
        n => Err(io::Error::other(format!(
            "{shown_root}: {n} event files could not be opened"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// `records` of `root` on a thread, given `seconds` to finish: its problems, or `None`.
    fn read_within(root: &Path, seconds: u64) -> Option<String> {
        let (root, (send, receive)) = (root.to_path_buf(), mpsc::channel());
        std::thread::spawn(move || {
            let (mut out, mut problems) = (io::sink(), Vec::new());
            let _ = records(&root, "logs", &mut out, &mut problems);
            let _ = send.send(String::from_utf8_lossy(&problems).into_owned());
        });
        receive.recv_timeout(Duration::from_secs(seconds)).ok()
    }

    /// An event of one image of `bytes` bytes, and its value's size as `read` says it.
    fn image_event(bytes: usize) -> (Vec<u8>, usize) {
        use crate::sources::tensorboard::proto::{self, event::What, summary};
        let image = summary::Image {
            encoded_image_string: vec![7; bytes].into(),
            ..Default::default()
        };
        let value = summary::Value {
            tag: "pic".into(),
            value: Some(summary::value::Value::Image(image)),
            ..Default::default()
        };
        let size = prost::Message::encoded_len(&value);
        let summary = proto::Summary { value: vec![value] };
        let event = prost::Message::encode_to_vec(&proto::Event {
            wall_time: 1.0,
            step: 1,
            what: Some(What::Summary(summary)),
        });
        (event, size)
    }

    #[test]
    fn a_record_over_a_read_is_read_whole_and_one_not_written_yet_is_said() {
        use crate::sources::tensorboard::framing::frame;
        let dir = std::env::temp_dir().join(format!("rreview-tbbig-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let (big, size) = image_event(READ_BYTES as usize + 100);
        let mut bytes = [frame(&image_event(5).0), frame(&big)].concat();
        let whole = bytes.len();
        // A header (its CRC good) of a 100 MiB record of which nothing is written yet.
        let mut partial = frame(&[]);
        partial[..8].copy_from_slice(&(100u64 << 20).to_le_bytes());
        let crc = crate::sources::tensorboard::framing::masked_crc(&partial[..8]);
        partial[8..12].copy_from_slice(&crc.to_le_bytes());
        bytes.extend_from_slice(&partial[..12]);
        let path = dir.join("e.tfevents.1");
        std::fs::write(&path, &bytes).unwrap_or_default();
        let (mut out, mut problems) = (Vec::new(), Vec::new());
        let done = records(&path, "e", &mut out, &mut problems);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(done.is_ok());
        let out = String::from_utf8_lossy(&out);
        let offsets: Vec<&str> = out.lines().collect();
        assert_eq!(offsets.len(), 2, "{out}");
        assert!(
            offsets[1].contains(&format!(r#""bytes":{size}}}"#)),
            "{out}"
        );
        assert_eq!(
            String::from_utf8_lossy(&problems),
            format!("e.tfevents.1@{whole}: incomplete last record (12 bytes); not read\n")
        );
    }

    #[test]
    fn a_file_that_cannot_be_opened_is_said_and_the_rest_read() {
        use crate::sources::tensorboard::framing::frame;
        let dir = std::env::temp_dir().join(format!("rreview-tbopen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let linked = std::os::unix::fs::symlink(dir.join("gone"), dir.join("a.tfevents.1"));
        assert!(linked.is_ok());
        let written = std::fs::write(dir.join("b.tfevents.1"), frame(&image_event(5).0));
        assert!(written.is_ok());
        let (mut out, mut problems) = (Vec::new(), Vec::new());
        let done = records(&dir, "logs", &mut out, &mut problems);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            done.map_err(|e| e.to_string()),
            Err("logs: 1 event files could not be opened".to_owned())
        );
        assert!(String::from_utf8_lossy(&problems)
            .starts_with("a.tfevents.1: cannot be opened: No such file or directory"));
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains(r#""file":"b.tfevents.1""#), "{out}");
    }

    #[test]
    fn a_fifo_or_a_link_to_a_device_is_no_event_file_to_read() {
        let dir = std::env::temp_dir().join(format!("rreview-tb-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let fifo = dir.join("a.tfevents.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()));
        let linked = std::os::unix::fs::symlink("/dev/zero", dir.join("b.tfevents.zero"));
        assert!(linked.is_ok());
        let problems = read_within(&dir, 20);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            problems.as_deref(),
            Some(
                "a.tfevents.fifo: not a regular file; not read\n\
                 b.tfevents.zero: not a regular file; not read\n"
            )
        );
    }
}
