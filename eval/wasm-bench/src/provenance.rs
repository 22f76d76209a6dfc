//! Where a record comes from: when its run started (UTC) and which commit of the repository it
//! ran in (marked dirty when tracked files other than the records differ from it), for every
//! summary.json written.

use std::process::Command;

use serde::Serialize;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// Taken once, at the start of a run; serialized as the fields `date_utc` and `commit`.
#[derive(Debug, Clone, Serialize)]
pub struct Provenance {
    /// The start of the run, RFC 3339 in UTC to the second, e.g. `2026-01-31T09:15:02Z`.
    pub date_utc: String,
    /// `git rev-parse --short=10 HEAD` of the repository around the working directory,
    /// suffixed `-dirty` when `git status --porcelain --untracked-files=no` lists anything
    /// outside `eval/results/` (the records a run writes, so that the later of repeated runs
    /// are not marked by the earlier ones' records);
    /// None when git is unavailable or the working directory is in no repository.
    pub commit: Option<String>,
}

impl Provenance {
    pub fn now() -> Provenance {
        let provenance = Provenance {
            date_utc: date_utc(OffsetDateTime::now_utc()),
            commit: commit(),
        };
        tracing::info!(date_utc = %provenance.date_utc, commit = ?provenance.commit, "provenance");
        provenance
    }

    /// One line for a summary.md: `Run started 2026-01-31T09:15:02Z at commit 0123456789.`
    pub fn markdown(&self) -> String {
        format!(
            "Run started {} at commit {}.",
            self.date_utc,
            self.commit.as_deref().unwrap_or("unknown (no git)")
        )
    }
}

/// `at` in RFC 3339, UTC, whole seconds.
fn date_utc(at: OffsetDateTime) -> String {
    let at = at.replace_nanosecond(0).unwrap_or(at);
    at.format(&Rfc3339).unwrap_or_else(|error| {
        tracing::warn!(%error, "formatting the run's date");
        String::new()
    })
}

/// The commit of the working directory's repository, or None without git.
fn commit() -> Option<String> {
    let hash = git(&["rev-parse", "--short=10", "HEAD"])?;
    let status = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":/",
        RECORDS_EXCLUDED,
    ])?;
    Some(commit_label(&hash, &status))
}

/// The pathspec that leaves the records out of the dirty check (git's own syntax).
const RECORDS_EXCLUDED: &str = ":(top,exclude)eval/results";

/// `hash` (trimmed), with `-dirty` when `porcelain` (git status's output) lists a change.
fn commit_label(hash: &str, porcelain: &str) -> String {
    let hash = hash.trim();
    if porcelain.trim().is_empty() {
        hash.to_owned()
    } else {
        format!("{hash}-dirty")
    }
}

/// The standard output of `git ARGS` when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    match Command::new("git").args(args).output() {
        Ok(output) if output.status.success() => String::from_utf8(output.stdout).ok(),
        Ok(output) => {
            tracing::warn!(
                ?args,
                status = %output.status,
                stderr = %String::from_utf8_lossy(&output.stderr).trim(),
                "git failed: no commit recorded"
            );
            None
        }
        Err(error) => {
            tracing::warn!(%error, "git is unavailable: no commit recorded");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_tracked_file_marks_the_commit_dirty() {
        assert_eq!(commit_label("0123456789\n", ""), "0123456789");
        assert_eq!(commit_label("0123456789\n", "\n"), "0123456789");
        assert_eq!(
            commit_label("0123456789\n", " M eval/README.md\n"),
            "0123456789-dirty"
        );
    }

    #[test]
    fn the_date_is_rfc3339_utc_to_the_second() {
        let at = OffsetDateTime::from_unix_timestamp(1_767_225_600)
            .unwrap()
            .replace_nanosecond(123_456_789)
            .unwrap();
        assert_eq!(date_utc(at), "2026-01-01T00:00:00Z");
    }

    #[test]
    fn the_commit_of_this_repository_is_ten_hex_digits() {
        // Run inside the repository's checkout (cargo test's working directory is the crate);
        // without git the commit is None, which is what the record says then.
        if let Some(commit) = commit() {
            let hash = commit.trim_end_matches("-dirty");
            assert_eq!(hash.len(), 10, "{commit}");
            assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{commit}");
        }
    }
}
