//! `spool status DIR`: what a spool holds (pending and quarantined batches, where each
//! source file is read to, what was refused), read without taking the spool over: the
//! database is opened read-only, beside a collector that may be writing it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

use super::{MemberKey, SpoolError, FILE};

fn rows(db: &Connection, sql: &str, columns: &[&str]) -> rusqlite::Result<Vec<Value>> {
    let mut query = db.prepare(sql)?;
    let found = query.query_map([], |r| {
        let mut row = serde_json::Map::new();
        for (at, name) in columns.iter().enumerate() {
            let value = match r.get_ref(at)? {
                rusqlite::types::ValueRef::Integer(n) => json!(n),
                rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                _ => Value::Null,
            };
            row.insert((*name).to_owned(), value);
        }
        Ok(Value::Object(row))
    })?;
    found.collect()
}

fn read(db: &Connection, directory: &Path) -> rusqlite::Result<Value> {
    let meta = |key: &str| -> Value {
        db.query_row("SELECT value FROM meta WHERE key = ?", [key], |r| {
            r.get::<_, String>(0)
        })
        .map_or(Value::Null, Value::String)
    };
    let next: u64 = meta("next_sequence")
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let (batches, points, bytes): (i64, i64, i64) = db.query_row(
        "SELECT count(*), coalesce(sum(points), 0), coalesce(sum(length(payload)), 0) \
         FROM batches WHERE quarantined IS NULL",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    // A spool no collector of today has opened yet has neither (read-only: not migrated).
    let generations: bool = db.query_row(
        "SELECT count(*) = 2 FROM sqlite_master WHERE name IN ('generations', 'source_events')",
        [],
        |r| r.get(0),
    )?;
    let (generation, joined) = if generations {
        (
            "coalesce(g.generation, 1)",
            "LEFT JOIN generations g USING (source, file)",
        )
    } else {
        ("1", "")
    };
    Ok(json!({
        "spool": directory.display().to_string(),
        "owner": meta("owner"),
        "epoch": meta("epoch"),
        "next_sequence": next,
        // How the spool began: "pending" (waiting for its checkpoints), or what the gateway
        // said of the member's earlier spools; null for a spool made before it was asked.
        "resume": match meta("resume") {
            Value::String(text) if text != "pending" => {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
            other => other,
        },
        "pending": {"batches": batches, "points": points, "bytes": bytes},
        "quarantined": rows(db, "SELECT sequence, points, quarantined FROM batches WHERE \
                                 quarantined IS NOT NULL ORDER BY sequence",
                            &["sequence", "points", "reason"])?,
        "positions": rows(db, &format!("SELECT source, file, offset, line, {generation} \
                                         FROM positions p {joined} ORDER BY source, file"),
                          &["source", "file", "offset", "line", "generation"])?,
        "source_events": if generations {
            rows(db, "SELECT source, file, event, count, detail FROM source_events \
                      ORDER BY first_at, rowid", &["source", "file", "event", "count", "detail"])?
        } else {
            Vec::new()
        },
        "rejected": rows(db, "SELECT source, reason, count FROM rejections \
                              ORDER BY source, reason", &["source", "reason", "count"])?,
    }))
}

/// The member the spool in `directory` belongs to, from its `owner` (RUN/ATTEMPT/MEMBER).
pub fn owner(directory: &Path) -> Result<MemberKey, SpoolError> {
    let found = status(directory)?;
    let text = found["owner"].as_str().unwrap_or_default();
    let mut parts = text.rsplitn(3, '/');
    let (member, attempt, run_id) = (parts.next(), parts.next(), parts.next());
    match (run_id, attempt.and_then(|a| a.parse().ok()), member) {
        (Some(run_id), Some(attempt), Some(member)) if !run_id.is_empty() && !member.is_empty() => {
            Ok(MemberKey {
                run_id: run_id.to_owned(),
                attempt,
                member: member.to_owned(),
            })
        }
        _ => Err(SpoolError(format!(
            "spool {} names no owner RUN/ATTEMPT/MEMBER (it says {text:?})",
            directory.display()
        ))),
    }
}

/// What the spool in `directory` holds, as `spool status` prints it.
pub fn status(directory: &Path) -> Result<Value, SpoolError> {
    let path = directory.join(FILE);
    if !path.exists() {
        return Err(SpoolError(format!(
            "no spool at {} ({FILE} not found)",
            directory.display()
        )));
    }
    let damaged = |e: rusqlite::Error| {
        SpoolError(format!(
            "spool {} is damaged ({e}); it is kept as it is",
            path.display()
        ))
    };
    let db =
        Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(damaged)?;
    let tables: i64 = db
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'meta'",
            [],
            |r| r.get(0),
        )
        .map_err(damaged)?;
    if tables == 0 {
        return Err(SpoolError(format!(
            "spool {} has no tables yet (a collector is creating it, or it is empty); \
             nothing is spooled in it",
            path.display()
        )));
    }
    read(&db, directory).map_err(damaged)
}
