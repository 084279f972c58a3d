//! Lockfiles on disk: one per integration, `locks/<integration>.json` in the config file's folder
//! (file I/O). Written atomically through the same writer as the last-known-good cards, so a
//! reader (the gateway re-reads the file on every profile change) sees the old lock or the new.

use std::path::{Path, PathBuf};

use super::{Lock, LockError, wire};

/// The folder of lockfiles, relative to the config file's folder.
pub const LOCKS_DIR: &str = "locks";

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
pub fn read(path: &Path) -> Result<Option<Lock>, LockError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LockError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let bytes = crate::card::wire::read_bounded(file, wire::MAX_LOCK_BYTES).map_err(|source| {
        LockError::Read {
            path: path.to_owned(),
            source,
        }
    })?;
    wire::parse(&bytes, &path.display().to_string()).map(Some)
}

/// Writes `lock` to `path` atomically, creating the folder when missing.
pub fn write(path: &Path, lock: &Lock) -> Result<(), LockError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| LockError::Write {
            source: crate::control::state::StateError::Io {
                path: dir.to_owned(),
                source,
            },
        })?;
    }
    crate::control::state::write_atomic(path, wire::to_json(lock).as_bytes())
        .map_err(|source| LockError::Write { source })
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
            &crate::lock::diff::tests::integration(),
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
    fn a_corrupt_lockfile_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, "{\"agent\": 1}").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.starts_with(&path.display().to_string()), "{e}");
        assert!(e.contains("agent: invalid type"), "{e}");
    }
}
