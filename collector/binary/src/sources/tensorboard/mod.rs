//! TensorBoard event files: TFRecord framing, and the events it frames decoded.

pub mod events;
pub mod framing;

/// The project's declaration of TensorBoard's messages, compiled at build time.
#[allow(clippy::all, clippy::pedantic)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/tuneplane.tensorboard.v1.rs"));
}
