//! `tuneplane-collector probe`: whether this host reaches ingest, checked the way a
//! collector connects, one layer at a time: the name resolves (DNS), an address accepts a
//! connection (TCP), the server's certificate chains to the CA bundle and names the host
//! (TLS, rustls as the collector uses it), and, given a token, ingest takes it (a PushBatch
//! of nothing: a token it accepts gets INVALID_ARGUMENT for the empty batch, never a
//! write). Each failure is named with what usually fixes it; the first failed layer ends
//! the probe (the ones above it cannot be told).

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};

use crate::contract::code_name;
use crate::contract::proto::telemetry_ingest_client::TelemetryIngestClient;
use crate::contract::proto::PushBatchRequest;
use crate::send::target::Token;

/// How long a layer may take by default (a connection, a handshake, an answer).
const PATIENCE: &str = "5";

/// `--timeout`: seconds, more than none and at most an hour.
fn seconds(given: &str) -> Result<Duration, String> {
    match given.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{given:?} is not a number of seconds above 0 and at most 3600"
        )),
    }
}

#[derive(clap::Args)]
pub struct ProbeArgs {
    /// Ingest's address as collectors are given it (HOST:PORT).
    #[arg(long)]
    target: String,
    /// The CA bundle (PEM) ingest's certificate is checked against.
    #[arg(long)]
    ca_file: PathBuf,
    /// A workload token to check ingest accepts (its run, attempt and member).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// The name the certificate must carry, when it is not the target's host.
    #[arg(long)]
    server_name: Option<String>,
    /// Seconds each layer may take (a connection, the TLS handshake, ingest's answer) before
    /// it is called failed: raise it over a slow link.
    #[arg(long, value_name = "SECONDS", default_value = PATIENCE, value_parser = seconds)]
    timeout: Duration,
}

/// One layer's outcome: what was found, or what failed and its fix.
type Layer<T> = Result<(T, String), (String, &'static str)>;

fn say(layer: &str, outcome: Result<&str, (&str, &str)>) {
    match outcome {
        Ok(found) => println!("ok    {layer}: {found}"),
        Err((why, fix)) => println!("FAIL  {layer}: {why}\n      fix: {fix}"),
    }
}

fn dns(host: &str, port: u16) -> Layer<Vec<SocketAddr>> {
    match (host, port).to_socket_addrs() {
        Ok(found) => {
            let found: Vec<SocketAddr> = found.collect();
            let shown: Vec<String> = found.iter().map(|a| a.ip().to_string()).collect();
            Ok((found, format!("{host} is {}", shown.join(", "))))
        }
        Err(e) => Err((
            format!("{host} does not resolve: {e}"),
            "check the name (the gateway's hostname as the platform gives it) and this \
             host's resolver (/etc/resolv.conf); a cluster-internal name does not resolve \
             outside the cluster",
        )),
    }
}

fn tcp(addresses: &[SocketAddr], patience: Duration) -> Layer<TcpStream> {
    let mut failed = Vec::new();
    for address in addresses {
        let started = Instant::now();
        match TcpStream::connect_timeout(address, patience) {
            Ok(stream) => {
                let took = started.elapsed().as_secs_f64() * 1000.0;
                return Ok((
                    stream,
                    format!("{address} accepts connections ({took:.1} ms)"),
                ));
            }
            Err(e) => failed.push(format!("{address}: {e}")),
        }
    }
    Err((
        format!("no address accepts a connection ({})", failed.join("; ")),
        "refused: nothing listens on that port (ingest down, or another port); timed out: \
         a firewall or security group between this host and the gateway drops the traffic",
    ))
}

fn roots(ca_file: &Path) -> Result<rustls::RootCertStore, (String, &'static str)> {
    let bad = |why: String| (why, "give the CA bundle the platform issued (PEM)");
    let certificates = CertificateDer::pem_file_iter(ca_file)
        .map_err(|e| bad(format!("{}: {e}", ca_file.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("{}: {e}", ca_file.display())))?;
    let mut store = rustls::RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(bad(format!("{} holds no certificate", ca_file.display())));
    }
    Ok(store)
}

fn tls(stream: TcpStream, name: &str, ca_file: &Path, patience: Duration) -> Layer<()> {
    let store = roots(ca_file)?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| {
        (
            format!("TLS: {e}"),
            "report this: the build's TLS is broken",
        )
    })?
    .with_root_certificates(store)
    .with_no_client_auth();
    let server = ServerName::try_from(name.to_owned()).map_err(|e| {
        (
            format!("{name} is not a name a certificate can carry: {e}"),
            "give --server-name the name in ingest's certificate",
        )
    })?;
    let mut connection = rustls::ClientConnection::new(Arc::new(config), server).map_err(|e| {
        (
            format!("TLS: {e}"),
            "report this: the build's TLS is broken",
        )
    })?;
    let mut stream = stream;
    let _ = stream.set_read_timeout(Some(patience));
    let mut tls = rustls::Stream::new(&mut connection, &mut stream);
    match tls.flush().and_then(|()| {
        // The handshake completes on the first write; nothing is written to ingest.
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(tls.sock)?;
        }
        Ok(())
    }) {
        Ok(()) => {
            let version = connection
                .protocol_version()
                .map_or("TLS".to_owned(), |v| format!("{v:?}"));
            Ok((
                (),
                format!(
                    "{version}; the certificate chains to {} and names {name}",
                    ca_file.display()
                ),
            ))
        }
        Err(e) => Err(tls_failure(&e.to_string(), name)),
    }
}

fn tls_failure(why: &str, name: &str) -> (String, &'static str) {
    // A CA of the same name that did not sign it (another gateway's) is BadSignature.
    let fix = if ["UnknownIssuer", "unknown issuer", "BadSignature"]
        .iter()
        .any(|w| why.contains(w))
    {
        "the server's certificate is not signed by a CA in --ca-file: give the bundle of the \
         CA that issued ingest's certificate (a TLS-intercepting proxy in the way shows this \
         too)"
    } else if why.contains("NotValidForName") || why.contains("not valid for name") {
        "the certificate does not carry the name connected to: connect by the name in it, or \
         give it with --server-name"
    } else if why.contains("Expired") || why.contains("expired") || why.contains("NotValidYet") {
        "the certificate is outside its validity: renew it, or correct this host's clock"
    } else if why.contains("InvalidContentType") || why.contains("corrupt message") {
        "the port does not speak TLS: the target is another service, or ingest is run \
         without TLS"
    } else {
        "look at ingest's TLS settings (docs/settings.md, TUNEPLANE_GATEWAY_*)"
    };
    (format!("the handshake with {name} failed: {why}"), fix)
}

fn token(args: &ProbeArgs, path: &Path) -> Layer<()> {
    let bearer = Token::File(path.to_path_buf())
        .bearer()
        .map_err(|why| (why.0, "give the token file the platform wrote"))?;
    let pem =
        std::fs::read(&args.ca_file).map_err(|e| (e.to_string(), "give a readable CA bundle"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| (e.to_string(), "report this"))?;
    let endpoint = crate::send::target::endpoint(&args.target, pem, args.server_name.as_deref())
        .map_err(|e| (e, "give the target as HOST:PORT"))?;
    let asked = async {
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let mut request = tonic::Request::new(PushBatchRequest::default());
        request.metadata_mut().insert("authorization", bearer);
        TelemetryIngestClient::new(channel)
            .push_batch(request)
            .await
    };
    let answer = runtime
        .block_on(async { tokio::time::timeout(args.timeout, asked).await })
        .unwrap_or_else(|_| {
            Err(tonic::Status::deadline_exceeded(format!(
                "no answer within {:?}",
                args.timeout
            )))
        });
    match answer {
        Err(status) if status.code() == tonic::Code::InvalidArgument => Ok((
            (),
            "ingest accepts the token (an empty batch was refused, nothing written)".into(),
        )),
        Err(status) => {
            let fix = match status.code() {
                tonic::Code::Unauthenticated => {
                    "the token is malformed, expired or signed by another gateway: ask the \
                     platform for a fresh one"
                }
                tonic::Code::PermissionDenied => {
                    "the token's attempt has ended or its node was revoked: a new attempt \
                     gets a new token"
                }
                _ => "ingest is reachable but did not answer: look at its logs",
            };
            Err((
                format!("{}: {}", code_name(status.code()), status.message()),
                fix,
            ))
        }
        Ok(_) => Err((
            "something answered an empty batch with OK: it is not ingest".into(),
            "check the target is ingest's telemetry port (8444)",
        )),
    }
}

/// Runs the probe; exit status 0 when every layer asked passed, 1 otherwise, 2 for a
/// target that is not HOST:PORT.
pub fn probe(args: &ProbeArgs) -> u8 {
    let Some((host, port)) = args
        .target
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
    else {
        eprintln!(
            "tuneplane-collector probe: --target {:?} is not HOST:PORT",
            args.target
        );
        return 2;
    };
    let name = args.server_name.as_deref().unwrap_or(host);
    let passed = (|| {
        let (addresses, found) = dns(host, port).map_err(|e| ("DNS", e))?;
        say("DNS", Ok(&found));
        let (stream, found) = tcp(&addresses, args.timeout).map_err(|e| ("TCP", e))?;
        say("TCP", Ok(&found));
        let ((), found) = tls(stream, name, &args.ca_file, args.timeout).map_err(|e| ("TLS", e))?;
        say("TLS", Ok(&found));
        if let Some(path) = &args.token_file {
            let ((), found) = token(args, path).map_err(|e| ("token", e))?;
            say("token", Ok(&found));
        }
        Ok::<(), (&str, (String, &str))>(())
    })();
    match passed {
        Ok(()) => 0,
        Err((layer, (why, fix))) => {
            say(layer, Err((&why, fix)));
            1
        }
    }
}
