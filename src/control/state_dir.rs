//! Last-known-good cards on disk, so a restart while an agent is down keeps traffic flowing (file
//! I/O; files are read through the one bounded reader, [`crate::types::file`]).
//!
//! One JSON file per integration under `[state] dir`, holding the last card that validated and
//! compiled, its validators and the time it was fetched. Files are written atomically: a temp file
//! in the same directory, `fsync`, `rename` over the old one, then `fsync` of the directory so the
//! rename itself survives a crash. A reader therefore sees the old file or the new one, never a mix.
//!
//! A file that does not parse, has another format version, names another integration or whose card
//! does not match its recorded digest is reported as [`StateError::Corrupt`]; the caller logs a
//! warning and ignores it. A card loaded from disk is still validated and compiled like a fetched
//! one, and is served marked "not yet revalidated" until the first successful fetch.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::control::fetch::Validators;

/// Cap on one state file, read through the one bounded reader ([`crate::types::file`]): the
/// largest card a config may allow (16 MiB), with room for JSON escaping of the card text in the
/// record; a larger file is not one this gateway wrote and is ignored as corrupt.
pub const MAX_STATE_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Version of the on-disk format; a file with another version is ignored.
pub const FORMAT: u32 = 1;

/// Errors reading or writing the state directory.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The directory or a file could not be created, written, synced or renamed.
    #[error("state {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file exists but cannot be trusted (truncated, garbage, wrong digest, wrong integration).
    #[error("state file {path} ignored: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// One persisted last-known-good card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedCard {
    /// [`FORMAT`].
    pub format: u32,
    /// The integration's name.
    pub integration: String,
    /// The URL the card was fetched from (after same-origin redirects).
    pub url: String,
    /// The origin it came from (validation may depend on it, e.g. for signature keys).
    pub origin: String,
    /// When it was fetched (or last revalidated), seconds since the Unix epoch.
    pub fetched_at: u64,
    /// Validators for the next conditional request.
    pub validators: Validators,
    /// `Cache-Control: max-age` in seconds, if the server sent one.
    pub max_age: Option<u64>,
    /// `sha256:<hex>` of `card`'s bytes, checked on load.
    pub card_sha256: String,
    /// The card exactly as received (validated UTF-8 JSON).
    pub card: String,
}

impl SavedCard {
    /// Builds a record; `card` must be the bytes that validated.
    pub fn new(
        integration: &str,
        url: &str,
        origin: &str,
        fetched_at: SystemTime,
        validators: Validators,
        max_age: Option<Duration>,
        card: &[u8],
    ) -> Result<SavedCard, std::str::Utf8Error> {
        let text = std::str::from_utf8(card)?.to_owned();
        Ok(SavedCard {
            format: FORMAT,
            integration: integration.to_owned(),
            url: url.to_owned(),
            origin: origin.to_owned(),
            fetched_at: fetched_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            validators,
            max_age: max_age.map(|d| d.as_secs()),
            card_sha256: digest(text.as_bytes()),
            card: text,
        })
    }

    /// `fetched_at` as a time.
    pub fn fetched_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.fetched_at)
    }
}

/// A file-name stem for an integration: its name when plain `[A-Za-z0-9_-]`, else hex-encoded, so
/// no name can escape the directory.
fn stem(integration: &str) -> String {
    let safe = !integration.is_empty()
        && integration
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if safe {
        integration.to_owned()
    } else {
        format!("x-{}", hex::encode(integration))
    }
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// Uses `dir`, creating it (and its parents) if missing.
    pub fn open(dir: impl Into<PathBuf>) -> Result<StateDir, StateError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| StateError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(StateDir { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The file for an integration. Names are hex-encoded unless they are plain
    /// `[A-Za-z0-9_-]`, so no name can escape the directory.
    pub fn file_for(&self, integration: &str) -> PathBuf {
        self.dir.join(format!("{}.card.json", stem(integration)))
    }

    /// The file for an integration's extended card as seen by one credential identity
    /// (`sha256:<hex>`); the name carries a prefix of the digest, never the secret.
    pub fn extended_file_for(&self, integration: &str, identity: &str) -> PathBuf {
        let id: String = identity
            .trim_start_matches("sha256:")
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(32)
            .collect();
        self.dir
            .join(format!("{}.extended.{id}.card.json", stem(integration)))
    }

    /// Saves an integration's extended card for `identity`, and removes any other identity's
    /// (a changed credential must not leave the old identity's view on disk).
    pub fn save_extended(&self, card: &SavedCard, identity: &str) -> Result<(), StateError> {
        let path = self.extended_file_for(&card.integration, identity);
        self.save_to(&path, card)?;
        self.remove_extended_except(&card.integration, Some(&path))
    }

    /// Loads the extended card of `integration` for exactly `identity`.
    pub fn load_extended(
        &self,
        integration: &str,
        identity: &str,
    ) -> Result<Option<SavedCard>, StateError> {
        self.load_from(&self.extended_file_for(integration, identity), integration)
    }

    /// Removes every extended card of `integration` (the agent stopped offering one).
    pub fn remove_extended(&self, integration: &str) -> Result<(), StateError> {
        self.remove_extended_except(integration, None)
    }

    fn remove_extended_except(
        &self,
        integration: &str,
        keep: Option<&Path>,
    ) -> Result<(), StateError> {
        let prefix = format!("{}.extended.", stem(integration));
        let entries = std::fs::read_dir(&self.dir).map_err(|source| StateError::Io {
            path: self.dir.clone(),
            source,
        })?;
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix)
                && name.ends_with(".card.json")
                && Some(e.path().as_path()) != keep
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(())
    }

    /// Writes a record atomically (temp file, fsync, rename, fsync of the directory).
    pub fn save(&self, card: &SavedCard) -> Result<(), StateError> {
        self.save_to(&self.file_for(&card.integration), card)
    }

    fn save_to(&self, path: &Path, card: &SavedCard) -> Result<(), StateError> {
        let json = serde_json::to_vec_pretty(card).expect("SavedCard serialises");
        use crate::types::file::{FileError, write_atomic};
        write_atomic(path, &json, "state file").map_err(|e| match e {
            FileError::Write { path, source, .. } => StateError::Io { path, source },
            // `write_atomic` fails only with `Write`; anything else is passed on as it is.
            other => StateError::Io {
                path: path.to_owned(),
                source: std::io::Error::other(other),
            },
        })
    }

    /// Loads an integration's record: `Ok(None)` when there is none, [`StateError::Corrupt`] when
    /// the file cannot be trusted (the caller warns and ignores it).
    pub fn load(&self, integration: &str) -> Result<Option<SavedCard>, StateError> {
        self.load_from(&self.file_for(integration), integration)
    }

    fn load_from(&self, path: &Path, integration: &str) -> Result<Option<SavedCard>, StateError> {
        use crate::types::file::{FileError, read_capped};
        let corrupt = |reason: String| StateError::Corrupt {
            path: path.to_owned(),
            reason,
        };
        let bytes = match read_capped(path, MAX_STATE_FILE_BYTES, "state file") {
            Ok(b) => b,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(FileError::Io { source, .. }) => {
                return Err(StateError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
            // Over its cap or not a regular file: not a record this gateway wrote.
            Err(e) => return Err(corrupt(e.to_string())),
        };
        let card: SavedCard = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("not a state record: {e}")))?;
        if card.format != FORMAT {
            return Err(corrupt(format!("format {} is not {FORMAT}", card.format)));
        }
        if card.integration != integration {
            return Err(corrupt(format!(
                "records integration {:?}, not {integration:?}",
                card.integration
            )));
        }
        let actual = digest(card.card.as_bytes());
        if actual != card.card_sha256 {
            return Err(corrupt(format!(
                "card digest {actual} does not match the recorded {}",
                card.card_sha256
            )));
        }
        Ok(Some(card))
    }

    /// Removes an integration's record (e.g. when it leaves the config); a missing file is fine.
    pub fn remove(&self, integration: &str) -> Result<(), StateError> {
        let path = self.file_for(integration);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StateError::Io { path, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> SavedCard {
        SavedCard::new(
            name,
            "http://127.0.0.1:1/.well-known/agent-card.json",
            "http://127.0.0.1:1",
            SystemTime::now(),
            Validators {
                etag: Some("W/\"1\"".into()),
                last_modified: None,
            },
            Some(Duration::from_secs(60)),
            br#"{"name":"a"}"#,
        )
        .unwrap()
    }

    #[test]
    fn round_trip_and_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::open(dir.path().join("nested/state")).unwrap();
        assert!(s.load("echo").unwrap().is_none());
        let r = record("echo");
        s.save(&r).unwrap();
        assert_eq!(s.load("echo").unwrap().as_ref(), Some(&r));
        let mut r2 = record("echo");
        r2.card = r#"{"name":"b"}"#.into();
        r2.card_sha256 = digest(r2.card.as_bytes());
        s.save(&r2).unwrap();
        assert_eq!(s.load("echo").unwrap(), Some(r2));
        // No temp files left behind.
        let names: Vec<_> = std::fs::read_dir(s.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        s.remove("echo").unwrap();
        assert!(s.load("echo").unwrap().is_none());
    }

    #[test]
    fn truncated_garbage_and_tampered_files_are_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::open(dir.path()).unwrap();
        s.save(&record("echo")).unwrap();
        let path = s.file_for("echo");
        let full = std::fs::read(&path).unwrap();

        std::fs::write(&path, &full[..full.len() / 2]).unwrap();
        assert!(matches!(s.load("echo"), Err(StateError::Corrupt { .. })));

        std::fs::write(&path, b"\x00\xffgarbage").unwrap();
        assert!(matches!(s.load("echo"), Err(StateError::Corrupt { .. })));

        std::fs::write(&path, b"").unwrap();
        assert!(matches!(s.load("echo"), Err(StateError::Corrupt { .. })));

        let mut tampered = record("echo");
        tampered.card = r#"{"name":"evil"}"#.into();
        std::fs::write(&path, serde_json::to_vec(&tampered).unwrap()).unwrap();
        let e = s.load("echo").unwrap_err();
        assert!(e.to_string().contains("digest"), "{e}");

        std::fs::write(&path, serde_json::to_vec(&record("other")).unwrap()).unwrap();
        assert!(matches!(s.load("echo"), Err(StateError::Corrupt { .. })));
    }

    #[test]
    fn extended_cards_are_kept_per_identity_and_only_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::open(dir.path()).unwrap();
        let a = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let b = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
        s.save(&record("echo")).unwrap();
        s.save_extended(&record("echo"), a).unwrap();
        assert!(s.load_extended("echo", a).unwrap().is_some());
        assert!(
            s.load_extended("echo", b).unwrap().is_none(),
            "never another identity's view"
        );
        s.save_extended(&record("echo"), b).unwrap();
        assert!(
            s.load_extended("echo", a).unwrap().is_none(),
            "the old identity's file is gone"
        );
        assert!(s.load_extended("echo", b).unwrap().is_some());
        s.remove_extended("echo").unwrap();
        assert!(s.load_extended("echo", b).unwrap().is_none());
        assert!(s.load("echo").unwrap().is_some(), "the public card stays");
    }

    #[test]
    fn names_cannot_escape_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let s = StateDir::open(dir.path()).unwrap();
        let f = s.file_for("../../etc/passwd");
        assert_eq!(f.parent(), Some(dir.path()));
        assert_eq!(
            s.file_for("echo-1_a"),
            dir.path().join("echo-1_a.card.json")
        );
    }
}
