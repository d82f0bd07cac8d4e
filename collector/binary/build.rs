//! The messages come from the project's own declarations under `contract/`, compiled at build
//! time by protox (no `protoc` needed): the TensorBoard event messages and the HParams
//! plugin's data into prost types, the telemetry contract into prost types and the tonic
//! client of `TelemetryIngest`, and the node contract's clients of `SlurmJobControl` and
//! `NodeControl`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contract");
    let event = protos.join("tuneplane/tensorboard/v1/event.proto");
    let hparams = protos.join("tuneplane/tensorboard/v1/hparams.proto");
    let telemetry = protos.join("tuneplane/telemetry/v1/telemetry.proto");
    let slurm = protos.join("tuneplane/node/v1/slurm.proto");
    let node = protos.join("tuneplane/node/v1/node.proto");
    for path in [&event, &hparams, &telemetry, &slurm, &node] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    // `bytes` fields as `Bytes`: decoded from a record's `Bytes`, an image or a graph of up to
    // MAX_RECORD_BYTES is a view of the record read, never a second copy of it.
    prost_build::Config::new()
        .bytes(["."])
        .compile_fds(protox::compile([&event, &hparams], [&protos])?)?;
    tonic_prost_build::configure()
        .build_server(false)
        .bytes(".")
        .compile_fds(protox::compile([&telemetry], [&protos])?)?;
    // A Slurm job's collector is a client of control's SlurmJobControl, the node agent of its
    // NodeControl.
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(protox::compile([&slurm, &node], [&protos])?)?;
    Ok(())
}
