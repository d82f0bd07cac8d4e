//! Where batches go: ingest's address, the CA bundle its certificate is checked with, and
//! the workload token each batch carries (read again for every batch, so a renewed token is
//! used at once).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

use crate::collect::fence::failed;
use crate::send::Transient;

/// Where the workload token a batch carries comes from, looked up for every batch.
#[derive(Clone)]
pub enum Token {
    /// A file the platform rewrites when it renews the token.
    File(PathBuf),
    /// Held in this process's memory only (a Slurm job's collector), renewed elsewhere.
    Held(Arc<dyn Fn() -> String + Send + Sync>),
}

impl Token {
    pub fn current(&self) -> Result<String, Transient> {
        match self {
            Token::File(path) => {
                std::fs::read_to_string(path).map_err(|e| Transient(failed("token file", path, &e)))
            }
            Token::Held(current) => Ok(current()),
        }
    }

    /// The `authorization` header of a call: the current token as a bearer credential.
    pub fn bearer(&self) -> Result<MetadataValue<Ascii>, Transient> {
        let token = self.current()?;
        MetadataValue::try_from(format!("Bearer {}", token.trim())).map_err(|_| self.unusable())
    }

    pub fn unusable(&self) -> Transient {
        Transient(match self {
            Token::File(path) => format!("token file {} holds no usable token", path.display()),
            Token::Held(_) => "the workload token held is not usable".to_owned(),
        })
    }
}

/// Where batches go, and the workload token they carry.
#[derive(Clone)]
pub struct Target {
    pub address: String,
    pub ca_file: PathBuf,
    pub token: Token,
    pub server_name: Option<String>,
}

/// A TLS endpoint at `address` (host:port) trusting the CAs of `pem`, verifying
/// `server_name` when given, else the address's host.
pub fn endpoint(
    address: &str,
    pem: Vec<u8>,
    server_name: Option<&str>,
) -> Result<Endpoint, String> {
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(pem))
        .domain_name(server_name.unwrap_or(host));
    Ok(Endpoint::from_shared(format!("https://{address}"))
        .map_err(|e| format!("target {address}: {e}"))?
        .tls_config(tls)
        .map_err(|e| format!("TLS for {address}: {e}"))?
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(5)))
}
