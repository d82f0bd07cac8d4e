//! The typed fast path for a JSONL line as most lines are: `step`, `wall_time` and
//! `metrics` once each, plain numbers, names that are names, no config record, decoded
//! straight into a `Line` with no `Value` built. A line it does not take is read again, rule
//! by rule, by `parse_exactly`.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::decode::from_slice;
use super::Line;
use crate::sources::names::name_problem;

/// Names of a line compared with each other pair by pair; beyond this, through a set.
pub(super) const FEW_METRICS: usize = 16;

/// A line as most lines are: the three keys once each, plain numbers, names that are names.
/// Anything else fails here and is decoded again by `parse_exactly`, which says why.
#[derive(Deserialize)]
struct Plain<'a> {
    step: i64,
    #[serde(default)]
    wall_time: Option<f64>,
    #[serde(borrow)]
    metrics: PlainMetrics<'a>,
    /// A config record: the line is read by `parse_exactly` (null: none).
    #[serde(default)]
    config: Option<de::IgnoredAny>,
}

struct PlainMetrics<'a>(Vec<(Cow<'a, str>, f64)>);

impl<'de: 'a, 'a> Deserialize<'de> for PlainMetrics<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Pairs<'a> {
            type Value = PlainMetrics<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of name: number")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut pairs: Vec<(Cow<'a, str>, f64)> = Vec::new();
                // A line's few names are compared; a line of many (a hostile one: a 4 MiB
                // line holds some 500 000) is checked through a set, never pair by pair.
                let mut names: HashSet<Cow<'a, str>> = HashSet::new();
                while let Some((name, value)) = map.next_entry::<Cow<'a, str>, f64>()? {
                    if pairs.len() == FEW_METRICS {
                        names.extend(pairs.iter().map(|(seen, _)| seen.clone()));
                    }
                    let repeated = if pairs.len() < FEW_METRICS {
                        pairs.iter().any(|(seen, _)| *seen == name)
                    } else {
                        !names.insert(name.clone())
                    };
                    if repeated || name_problem(&name).is_some() {
                        return Err(de::Error::custom("not a plain line"));
                    }
                    pairs.push((name, value));
                }
                Ok(PlainMetrics(pairs))
            }
        }
        deserializer.deserialize_map(Pairs(std::marker::PhantomData))
    }
}

/// The line by the typed fast path, if it is a plain line.
pub(super) fn parse_plain(raw: &[u8], deep: bool) -> Option<Line> {
    match from_slice::<Plain<'_>>(raw, deep) {
        Ok(plain) if !plain.metrics.0.is_empty() && plain.config.is_none() => Some(Line {
            step: plain.step,
            wall_time: plain.wall_time,
            metrics: plain
                .metrics
                .0
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v))
                .collect(),
            ..Line::default()
        }),
        _ => None,
    }
}
