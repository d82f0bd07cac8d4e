//! Launch reports that must reach Node control.
//!
//! A final report (finished, failed, refused) is written into the launch's directory before
//! it is sent and removed once control has it. One that could not be delivered (control
//! unreachable, the agent stopped) is sent again from the agent's heartbeat loop, also after
//! the agent restarts, so control never keeps a launch `running` that has ended.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::Duration;

use prost::Message;
use tonic::Code;

use super::client::Control;
use super::state::write_private;
use crate::contract::code_name;
use crate::contract::node::launch_report::State;
use crate::contract::node::LaunchReport;

pub const PENDING: &str = "final-report.pb";

pub fn is_final(state: i32) -> bool {
    [State::Finished, State::Failed, State::Refused]
        .iter()
        .any(|s| *s as i32 == state)
}

fn state_name(state: i32) -> &'static str {
    State::try_from(state).map_or("STATE_UNSPECIFIED", |s| s.as_str_name())
}

/// True once control has the report (or has ended the launch otherwise).
pub fn send(
    client: &dyn Control,
    launch_dir: &Path,
    report: &LaunchReport,
    patience: Duration,
) -> bool {
    let pending = launch_dir.join(PENDING);
    let kept = is_final(report.state);
    if kept {
        if let Err(why) = write_private(&pending, &report.encode_to_vec()) {
            log::error!("launch {}: final report not kept: {why}", report.launch_id);
        }
    }
    let name = format!("launch {}: {}", report.launch_id, state_name(report.state));
    match client.report(report, patience) {
        Ok(attempt) => {
            let _ = fs::remove_file(&pending);
            let detail = if report.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", report.detail)
            };
            log::info!("{name}{detail} (attempt now {attempt})");
            true
        }
        Err(refused) if refused.code == Code::FailedPrecondition => {
            log::error!("{name} refused by control: {}", refused.message);
            let _ = fs::remove_file(&pending);
            true
        }
        Err(refused) => {
            let again = if kept { "; kept and sent again" } else { "" };
            log::warn!(
                "{name} not reported yet ({}: {}){again}",
                code_name(refused.code),
                refused.message
            );
            false
        }
    }
}

/// Sends the final reports still kept for launches no runner handles; how many went.
pub fn resend_pending(client: &dyn Control, launches: &Path, busy: &BTreeSet<i64>) -> usize {
    let Ok(entries) = fs::read_dir(launches) else {
        return 0;
    };
    let mut kept: Vec<(i64, std::path::PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .filter(|(id, path): &(i64, _)| !busy.contains(id) && path.join(PENDING).is_file())
        .collect();
    kept.sort();
    let mut sent = 0;
    for (id, directory) in kept {
        match fs::read(directory.join(PENDING)).map(|b| LaunchReport::decode(b.as_slice())) {
            Ok(Ok(report)) => {
                sent += usize::from(send(client, &directory, &report, Duration::from_secs(5)));
            }
            _ => log::error!("launch {id}: its kept final report cannot be read; left in place"),
        }
    }
    sent
}

#[cfg(test)]
mod tests;
