//! The event files of a TensorBoard log directory: every `*tfevents*` file below it
//! (sub-directories too: `add_scalars` writes there), in path order, within a bound. Symbolic links to directories are
//! not followed; a directory that cannot be listed is passed over with the reason.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Directory entries looked at per walk of one log directory.
pub const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Default)]
pub struct Listing {
    pub files: Vec<PathBuf>,
    pub problems: Vec<String>,
}

/// The run of the event file at `relative` (a '/'-separated path below the log
/// directory): its directory, "" for a file of the log directory itself.
pub fn run_of(relative: &str) -> &str {
    relative.rsplit_once('/').map_or("", |(run, _)| run)
}

/// The event files below `root` in path order (`root` itself, if it is a file).
pub fn event_files(root: &Path) -> Listing {
    event_files_within(root, MAX_ENTRIES)
}

/// `event_files` with at most `max_entries` directory entries looked at.
fn event_files_within(root: &Path, max_entries: usize) -> Listing {
    let mut listing = Listing::default();
    let (mut seen, mut pending) = (0usize, vec![root.to_path_buf()]);
    while let Some(directory) = pending.pop() {
        let entries = match fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                if directory == root {
                    listing.files.push(root.to_path_buf());
                }
                continue;
            }
            Err(e) => {
                listing
                    .problems
                    .push(format!("{}: not listed: {e}", directory.display()));
                continue;
            }
        };
        // No more entries are held than the bound lets be looked at, plus one to tell that
        // it was passed: a directory of millions of names is never listed whole.
        let budget = max_entries.saturating_sub(seen).saturating_add(1);
        let mut found: Vec<(String, bool)> = entries
            .filter_map(Result::ok)
            .take(budget)
            .map(|entry| {
                let is_directory = entry.file_type().is_ok_and(|t| t.is_dir());
                (
                    entry.file_name().to_string_lossy().into_owned(),
                    is_directory,
                )
            })
            .collect();
        seen += found.len();
        if seen > max_entries {
            listing.problems.push(format!(
                "{}: more than {max_entries} directory entries below it; {} and what is not \
                 yet listed are not read (a log directory holds event files, not a dataset)",
                root.display(),
                directory.display()
            ));
            break;
        }
        found.sort_unstable_by(|a, b| b.cmp(a));
        for (name, is_directory) in found {
            if is_directory {
                pending.push(directory.join(name));
            } else if name.contains("tfevents") {
                listing.files.push(directory.join(name));
            }
        }
    }
    listing.files.sort();
    listing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_over_the_bound_is_not_listed_whole() {
        let dir = std::env::temp_dir().join(format!("rreview-logdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (run, crowded) = (dir.join("a"), dir.join("b"));
        for made in [&run, &crowded] {
            std::fs::create_dir_all(made).unwrap_or_default();
        }
        std::fs::write(run.join("x.tfevents.1"), b"").unwrap_or_default();
        for i in 0..60 {
            std::fs::write(crowded.join(format!("{i}.tfevents")), b"").unwrap_or_default();
        }
        let listing = event_files_within(&dir, 50);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(listing.files, vec![run.join("x.tfevents.1")]);
        assert_eq!(listing.problems.len(), 1);
        assert!(listing.problems[0].contains("more than 50 directory entries"));
    }
}
