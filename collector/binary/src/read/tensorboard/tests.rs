//! `read` of event files on disk: a record larger than one read is read whole and one whose
//! bytes are not written yet is said, a file that cannot be opened is said and the run's
//! other files are still read, and a FIFO or a link to a device is not read as one.

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
