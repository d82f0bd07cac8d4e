//! The integration artifact as the collector reads it: which sources and rich channels
//! each member owns (each has exactly one owner, whose collector alone reads it).
//!
//! YAML (`.yaml`/`.yml`) or JSON, validated against the contract's own schema
//! (`integration-v1.json`, compiled in), then the rules a schema cannot say: ids and paths
//! declared once, mappings naming declared sources (and a run path only of a TensorBoard
//! source), one mapping per (source, run path, tag), a static config whose every setting can
//! be sent (`config`). The artifact is data, not instructions: owners and ids are names
//! (they become path components), and a channel schema's `$ref` must stay inside the schema
//! (`channel_schema`): nothing is fetched.

pub mod channel_schema;
mod config;
mod rules;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::io::Read;

use serde_json::Value;

use crate::collect::fence::{Fence, Refusal};
use crate::collect::{Channel, SourceKind, SourceSpec};
use crate::sources::config::Setting;
use crate::sources::names::bounded;

/// The artifact contract's schema, as the services check it.
const SCHEMA: &str =
    include_str!("../../../../contract/src/tuneplane/telemetry/v1/integration-v1.json");

/// What an artifact declares: each source or channel with its owner member, and the run's
/// static config (each member's collector sends it as it starts).
pub struct Integration {
    pub sources: Vec<(SourceSpec, String)>,
    pub mappings: usize,
    pub config: Vec<Setting>,
}

impl Integration {
    /// What `member`'s collector reads, relative paths below `workdir`.
    pub fn sources_of(&self, member: &str, workdir: &Path) -> Vec<SourceSpec> {
        self.sources
            .iter()
            .filter(|(_, owner)| owner == member)
            .map(|(spec, _)| {
                let mut spec = spec.clone();
                spec.path = workdir.join(&spec.path); // an absolute path replaces workdir
                spec
            })
            .collect()
    }
}

/// "artifact.sources[0].id" for the instance path "/sources/0/id".
fn place(pointer: &str) -> String {
    let mut out = String::from("artifact");
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else {
            out.push_str(&format!(".{part}"));
        }
    }
    out
}

/// An artifact's bytes, at most: it declares sources, it holds no data.
const MAX_ARTIFACT_BYTES: u64 = 1024 * 1024;
/// Flow collections (`[`, `{`) within one another a YAML artifact may hold: the parser's
/// time grows with the square of their depth.
const MAX_FLOW_DEPTH: usize = 64;

/// The deepest nesting of flow collections in `text`, outside quoted strings and comments.
fn flow_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut quote, mut comment, mut escaped) =
        (0usize, 0, None, false, false);
    for c in text.chars() {
        match (quote, c) {
            _ if comment => comment = c != '\n',
            (Some('"'), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), _) if c == q && !escaped => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => comment = true,
            (None, '[' | '{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        escaped = false;
    }
    deepest
}

fn document_of(path: &Path, fence: &Fence) -> Result<Value, String> {
    let origin = path.display();
    let file = fence.open_named(path).map_err(|refused| match refused {
        Refusal::Gone => format!("{origin}: cannot read: No such file or directory"),
        Refusal::Refused(why) => format!("{origin}: cannot read: {why}"),
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_ARTIFACT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            format!(
                "{origin}: cannot read: {}",
                crate::collect::fence::plain(&e)
            )
        })?;
    if bytes.len() as u64 > MAX_ARTIFACT_BYTES {
        return Err(format!(
            "{origin}: over {MAX_ARTIFACT_BYTES} bytes; an artifact declares \
                            sources, it holds no data"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| format!("{origin}: not UTF-8 text: {e}"))?;
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    if yaml {
        if flow_depth(&text) > MAX_FLOW_DEPTH {
            return Err(format!(
                "{origin}: not valid YAML: nested deeper than {MAX_FLOW_DEPTH} \
                                flow collections"
            ));
        }
        serde_yaml_ng::from_str(&text).map_err(|e| format!("{origin}: not valid YAML: {e}"))
    } else {
        let kind = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("JSON")
            .to_owned();
        serde_json::from_str(&text).map_err(|e| format!("{origin}: not valid {kind}: {e}"))
    }
}

/// The artifact at `path` (opened through `fence`: a regular file, outside the fenced
/// directories), checked whole; the error names the file and the place.
pub fn load(path: &Path, fence: &Fence) -> Result<Integration, String> {
    checked(
        document_of(path, fence)?,
        &path.display().to_string(),
        Compile::Channels,
    )
}

/// The artifact as JSON text (as control hands it over), checked whole; the error names
/// `origin` and the place.
pub fn from_json(text: &str, origin: &str) -> Result<Integration, String> {
    checked(json_document(text, origin)?, origin, Compile::Channels)
}

/// `from_json`, with the channel schemas checked (local references, depth) but not
/// compiled: who owns what, for the node agent. Compiling a tenant's patterns costs what
/// the tenant chooses, so it happens only in that launch's own collector, never in the
/// agent every launch of the node shares. Its channels hold no validator: never read with it.
pub fn declared(text: &str, origin: &str) -> Result<Integration, String> {
    checked(json_document(text, origin)?, origin, Compile::Nothing)
}

fn json_document(text: &str, origin: &str) -> Result<Value, String> {
    if text.len() as u64 > MAX_ARTIFACT_BYTES {
        return Err(format!("{origin}: over {MAX_ARTIFACT_BYTES} bytes"));
    }
    serde_json::from_str(text).map_err(|e| format!("{origin}: not valid JSON: {e}"))
}

/// Whether channel schemas are compiled into validators.
#[derive(PartialEq)]
enum Compile {
    Channels,
    Nothing,
}

fn checked(document: Value, origin: &str, compile: Compile) -> Result<Integration, String> {
    let schema: Value = serde_json::from_str(SCHEMA).map_err(|e| e.to_string())?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
    if let Some(error) = validator.iter_errors(&document).next() {
        let place = place(error.instance_path().as_str());
        return Err(bounded(format!("{origin}: {place} {error}")));
    }
    rules::check(&document, origin)?;
    let config = config::settings(&document).map_err(|why| bounded(format!("{origin}: {why}")))?;
    let mut channels = Vec::new();
    for (at, entry) in rules::entries(&document, "channels").iter().enumerate() {
        let number = |key: &str| entry.get(key).and_then(Value::as_u64).unwrap_or(1);
        let schema = entry.get("schema").unwrap_or(&Value::Null);
        let place = format!("channels[{at}].schema");
        let channel = if compile == Compile::Channels {
            let validator = channel_schema::compile_offline(schema, &place)
                .map_err(|why| format!("{origin}: {why}"))?;
            Some(Channel {
                validator: Arc::new(validator),
                max_record_bytes: number("max_record_bytes"),
                max_bytes_per_minute: number("max_bytes_per_minute"),
            })
        } else {
            channel_schema::check_schema(schema, &place)
                .map_err(|why| format!("{origin}: {why}"))?;
            None
        };
        channels.push((entry, SourceKind::Channel, channel));
    }
    let declared = rules::entries(&document, "sources").iter().map(|entry| {
        let tensorboard = rules::text(entry, "kind") == Some("tensorboard");
        let kind = if tensorboard {
            SourceKind::TensorBoard
        } else {
            SourceKind::Jsonl
        };
        (entry, kind, None)
    });
    // Sources first, then channels, as the artifact lists them.
    let sources = declared
        .chain(channels)
        .map(|(entry, kind, channel)| {
            let text = |key: &str| rules::text(entry, key).unwrap_or_default().to_owned();
            (
                SourceSpec {
                    id: text("id"),
                    path: PathBuf::from(text("path")),
                    kind,
                    channel,
                },
                text("owner"),
            )
        })
        .collect();
    let mappings = rules::entries(&document, "mappings").len();
    Ok(Integration {
        sources,
        mappings,
        config,
    })
}

/// `check FILE`: each source and channel with its owner, or why the artifact is refused.
pub fn check(path: &Path) -> u8 {
    match load(path, &Fence::default()) {
        Ok(found) => {
            let kinds: HashMap<SourceKind, &str> = [
                (SourceKind::Jsonl, "jsonl"),
                (SourceKind::TensorBoard, "tensorboard"),
                (SourceKind::Channel, "channel"),
            ]
            .into();
            for (spec, owner) in &found.sources {
                println!(
                    "{owner}\t{}\t{}\t{}",
                    kinds[&spec.kind],
                    spec.id,
                    spec.path.display()
                );
            }
            let config = match found.config.len() {
                0 => String::new(),
                keys => format!(", {keys} config keys"),
            };
            eprintln!(
                "{} sources and channels, {} mappings{config}: valid",
                found.sources.len(),
                found.mappings
            );
            0
        }
        Err(why) => {
            eprintln!("tuneplane-collector check: {why}");
            1
        }
    }
}
