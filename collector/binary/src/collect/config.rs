//! Config entries as a batch carries them: a source's settings as the contract's
//! `ConfigEntry`, and the integration artifact's static config, sealed once per collector
//! start in batches of its own (`seal_artifact`: they advance no file).

use crate::collect::draft::BatchDraft;
use crate::contract::proto::config_entry::{Origin, Value};
use crate::contract::proto::ConfigEntry;
use crate::sources::config::{ConfigValue, Setting};
use crate::spool::Spool;

/// Who declared settings, where and when: what each of their entries says besides itself.
#[derive(Debug, Clone, Copy)]
pub struct Declaring<'a> {
    /// The declaring source ("" for the artifact).
    pub source: &'a str,
    pub origin: Origin,
    /// A TensorBoard run ("" for any other).
    pub run_path: &'a str,
    pub wall_time: f64,
}

/// `settings` as entries declared by `by`.
pub fn entries(settings: Vec<Setting>, by: Declaring<'_>) -> Vec<ConfigEntry> {
    settings
        .into_iter()
        .map(|setting| ConfigEntry {
            source: by.source.to_owned(),
            key: setting.key,
            value: Some(match setting.value {
                ConfigValue::Number(number) => Value::Number(number),
                ConfigValue::Text(text) => Value::Text(text),
                ConfigValue::Flag(flag) => Value::Flag(flag),
            }),
            wall_time: by.wall_time,
            origin: by.origin as i32,
            run_path: by.run_path.to_owned(),
        })
        .collect()
}

/// Seals the artifact's `settings` (checked as it was loaded) at `now` in as many batches
/// as their bounds take (one, for any artifact within its size); returns how many.
pub fn seal_artifact(
    spool: &mut Spool,
    settings: &[Setting],
    max_bytes: usize,
    now: f64,
) -> rusqlite::Result<u64> {
    let by = Declaring {
        source: "",
        origin: Origin::Artifact,
        run_path: "",
        wall_time: now,
    };
    let mut rest = entries(settings.to_vec(), by);
    let mut batches = 0;
    while !rest.is_empty() {
        let mut draft = BatchDraft::new("", "");
        let before = rest.len();
        rest = draft.add_config_within(rest, max_bytes);
        if rest.len() == before {
            break; // one entry over a whole batch: not for an artifact checked as it loaded
        }
        batches += u64::from(spool.seal_alone(&mut draft, now)?.is_some());
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_an_entry_of_its_declarer() {
        let settings = vec![Setting {
            key: "optimizer.lr".into(),
            value: ConfigValue::Number(0.1),
        }];
        let by = Declaring {
            source: "tb",
            origin: Origin::Hparams,
            run_path: "eval",
            wall_time: 5.0,
        };
        let [entry] = entries(settings, by)
            .try_into()
            .unwrap_or_else(|_| panic!());
        assert_eq!(
            (entry.source, entry.key, entry.value, entry.run_path),
            (
                "tb".into(),
                "optimizer.lr".into(),
                Some(Value::Number(0.1)),
                "eval".into()
            )
        );
        assert_eq!(
            (entry.origin, entry.wall_time),
            (Origin::Hparams as i32, 5.0)
        );
    }

    #[test]
    fn the_artifacts_config_is_sealed_in_batches_of_its_own_within_their_bounds() {
        use crate::contract::proto::Batch;
        use prost::Message;
        let (directory, mut spool) = crate::spool::scratch("artifact");
        let settings: Vec<Setting> = (0..1_500)
            .map(|n| Setting {
                key: format!("k{n}"),
                value: ConfigValue::Number(f64::from(n)),
            })
            .collect();
        assert_eq!(seal_artifact(&mut spool, &settings, 3 << 20, 7.5), Ok(2));
        assert_eq!(seal_artifact(&mut spool, &[], 3 << 20, 7.5), Ok(0));
        let batches: Vec<Batch> = (spool.pending(10).unwrap().into_iter())
            .map(|b| Batch::decode(b.payload).unwrap())
            .collect();
        let sizes: Vec<usize> = batches.iter().map(|b| b.config.len()).collect();
        assert_eq!(sizes, [1_000, 500]);
        assert!(batches
            .iter()
            .all(|b| b.position.is_none() && b.chunks.is_empty()));
        let last = &batches[1].config[499];
        assert_eq!(
            (last.source.as_str(), last.key.as_str(), last.value.clone()),
            ("", "k1499", Some(Value::Number(1499.0)))
        );
        assert_eq!(
            (last.origin, last.wall_time),
            (Origin::Artifact as i32, 7.5)
        );
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
