//! The TensorBoard event messages come from the project's own declaration
//! (`protos/tuneplane/tensorboard/v1/event.proto`), compiled at build time by protox (no
//! `protoc` needed) into prost types.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protos");
    let event = protos.join("tuneplane/tensorboard/v1/event.proto");
    println!("cargo:rerun-if-changed={}", event.display());
    let files = protox::compile([&event], [&protos])?;
    // `bytes` fields as `Bytes`: decoded from a record's `Bytes`, an image or a graph of up to
    // MAX_RECORD_BYTES is a view of the record read, never a second copy of it.
    prost_build::Config::new().bytes(["."]).compile_fds(files)?;
    Ok(())
}
