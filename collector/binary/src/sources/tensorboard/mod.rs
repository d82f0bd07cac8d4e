//! TensorBoard event files: TFRecord framing, and the events it frames decoded (a scalar
//! tensor's value read by `tensor`, a session's hyperparameters by `hparams`).

pub mod events;
pub mod framing;
mod hparams;
pub mod simple;
mod tensor;
mod value;
mod wire;

/// The project's declaration of TensorBoard's messages, compiled at build time.
#[allow(clippy::all, clippy::pedantic)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/tuneplane.tensorboard.v1.rs"));
}
