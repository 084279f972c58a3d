//! Lockfiles on disk: one per integration, `locks/<integration>.json` in the config file's folder
//! (file I/O, the lockfile feature's only I/O; read through the one bounded reader and written
//! through the one atomic writer of [`crate::types::file`], the writer of the last-known-good
//! cards too, so a reader (the gateway re-reads the file on every profile change) sees the old
//! lock or the new).

use std::path::{Path, PathBuf};

use super::{Lock, LockError, wire};
use crate::types::file::{FileError, write_atomic};

/// The folder of lockfiles, relative to the config file's folder.
pub const LOCKS_DIR: &str = "locks";

/// Why an integration's lockfile could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableLock {
    /// The file exists but could not be read (not a regular file, over its cap, an I/O error).
    #[error("{source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: FileError,
    },
    /// The file is not a valid lockfile (the message names the file and the field).
    #[error(transparent)]
    Invalid(#[from] LockError),
}

impl UnreadableLock {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            UnreadableLock::Read { .. } => "read",
            UnreadableLock::Invalid(e) => e.kind(),
        }
    }
}

/// Errors reading or writing a lockfile.
#[derive(Debug, thiserror::Error)]
pub enum LockFileError {
    /// The file could not be read, or is not a valid lockfile.
    #[error(transparent)]
    Unreadable(#[from] UnreadableLock),
    /// The file or its folder could not be written (atomically: the old file, if any, is
    /// unchanged).
    #[error(transparent)]
    Write(FileError),
}

impl LockFileError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            LockFileError::Unreadable(e) => e.kind(),
            LockFileError::Write(_) => "write",
        }
    }
}

/// The lockfile of `integration` for the config file at `config_path`. Integration names are
/// validated path-safe (`[A-Za-z0-9._-]`, never `.` or `..`), so the name is the file stem.
pub fn path_for(config_path: &Path, integration: &str) -> PathBuf {
    config_path
        .parent()
        .unwrap_or(Path::new("."))
        .join(LOCKS_DIR)
        .join(format!("{integration}.json"))
}

/// Reads and parses a lockfile; `Ok(None)` when there is none (the integration is unpinned).
pub fn read(path: &Path) -> Result<Option<Lock>, UnreadableLock> {
    let cap = wire::MAX_LOCK_BYTES as u64;
    let bytes = match crate::types::file::read_capped(path, cap, "lockfile") {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(source) => {
            return Err(UnreadableLock::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    Ok(Some(wire::parse(&bytes, &path.display().to_string())?))
}

/// Writes `lock` to `path` atomically, creating the folder when missing.
pub fn write(path: &Path, lock: &Lock) -> Result<(), LockFileError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| {
            LockFileError::Write(FileError::Write {
                what: "lockfile folder",
                path: dir.to_owned(),
                source,
            })
        })?;
    }
    write_atomic(path, wire::to_json(lock).as_bytes(), "lockfile").map_err(LockFileError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_unpinned_and_a_written_lock_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("gateway.toml");
        let path = path_for(&config, "pricing");
        assert_eq!(path, dir.path().join("locks/pricing.json"));
        assert!(read(&path).unwrap().is_none());
        let lock = crate::lock::pin(
            &crate::lock::diff::tests::manifest(),
            &crate::lock::diff::tests::pricing_profile(),
            chrono::Utc::now(),
            Default::default(),
        )
        .unwrap()
        .lock;
        write(&path, &lock).unwrap();
        let back = read(&path).unwrap().unwrap();
        // Written to the second: the round trip keeps everything else exactly.
        assert_eq!(back.pinned_at.timestamp(), lock.pinned_at.timestamp());
        assert_eq!(back.requires, lock.requires);
        assert_eq!(back.card_digest, lock.card_digest);
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("locks"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["pricing.json"]);
    }

    #[test]
    fn a_corrupt_lockfile_names_the_file_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, "{\"agent\": 1}").unwrap();
        let e = read(&path).unwrap_err();
        assert_eq!(e.kind(), "invalid");
        let e = e.to_string();
        assert!(e.starts_with(&path.display().to_string()), "{e}");
        assert!(e.contains("agent: invalid type"), "{e}");
    }
}
