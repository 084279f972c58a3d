//! The one way the gateway reads a whole file: a regular file only, at most a cap of bytes; and
//! the one way it writes one, atomically (I/O: opens, reads or writes the one file it is given).
//!
//! Every file the gateway reads (the config, card files, JWKS and key files, lockfiles, artifact
//! schemas, CA files, token and credential files, last-known-good state files, the CLI's inputs)
//! goes through [`read_capped`], so a config swapped for a symbolic link to `/dev/zero`, a FIFO or
//! a 1 GB file can neither grow memory nor hang a reader:
//! - the file is opened with `O_NONBLOCK`, so opening a FIFO returns at once instead of waiting
//!   for a writer (on a regular file the flag changes nothing);
//! - the open handle is then checked to be a regular file: FIFOs, sockets, devices (`/dev/zero`,
//!   `/dev/stdin`) and directories are refused. The gateway expects regular files everywhere, and
//!   judging the open handle (not the path) leaves no window for a swap between check and read;
//! - at most `cap + 1` bytes are read (`take`), so a file that grows while it is read cannot
//!   push past the cap either; a file over its cap is refused, naming the cap.
//!
//! The caps are by kind, each a constant beside the code that parses the file (or a config key):
//! the config `[limits] max_config_bytes` (default `config::DEFAULT_MAX_CONFIG_BYTES`), JWKS
//! files `card::signature::MAX_JWKS_BYTES`, private key and token files
//! `config::MAX_PRIVATE_FILE_BYTES`, credential files `config::MAX_SECRET_BYTES`, lockfiles
//! `lock::wire::MAX_LOCK_BYTES`, artifact schemas `config::MAX_SCHEMA_BYTES`, CA files
//! `state::trust::MAX_CA_FILE_BYTES`, state files `control::state_dir::MAX_STATE_FILE_BYTES`, cards
//! read by the CLI `[client] max_card_bytes`.
//!
//! Callers on an async runtime call this from a blocking thread (`spawn_blocking`), or through
//! [`blocking`] where the caller cannot be made to wait for one, never from a data-plane task.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs `read` (a bounded file read) where it cannot hold up the data plane's tasks. Wherever the
/// control plane shares the data plane's runtime (with work stealing, the default, and on one
/// data-plane thread whatever `[runtime] work_stealing` says), that runtime is a multi-thread
/// one, so the read is made under `block_in_place`: the thread hands its other tasks to the
/// runtime (which starts a worker for them if need be) for as long as the read lasts. On a
/// single-threaded runtime (the control plane's own without work stealing on more than one
/// thread, the CLI's, a test's) nothing else is held up and the read runs as it is.
pub fn blocking<T>(read: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(read),
        _ => read(),
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened, its metadata read, or its bytes read.
    #[error("cannot read the {what} {}: {source}", path.display())]
    Io {
        /// What the file is for (e.g. "config", "JWKS file").
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The path is a FIFO, socket, device or directory, not a regular file.
    #[error(
        "the {what} {} is not a regular file (FIFOs, sockets, devices and directories are refused)",
        path.display()
    )]
    NotAFile {
        /// What the file is for.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// The file holds more than its cap.
    #[error("the {what} {} is larger than its cap of {cap} bytes; it was not read", path.display())]
    TooLarge {
        /// What the file is for.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cap, in bytes.
        cap: u64,
    },
    /// The file could not be written, synced or renamed into place (only for [`write_atomic`]).
    #[error("cannot write the {what} {}: {source}", path.display())]
    Write {
        /// What the file is for (e.g. "lockfile").
        what: &'static str,
        /// The file (the temp file, the target or its folder).
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text (only for [`read_capped_string`]).
    #[error("the {what} {} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// What the file is for.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
}

impl FileError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            FileError::Io { .. } => "unreadable",
            FileError::NotAFile { .. } => "not_a_file",
            FileError::TooLarge { .. } => "too_large",
            FileError::NotUtf8 { .. } => "not_utf8",
            FileError::Write { .. } => "unwritable",
        }
    }

    /// Whether the file is not there to read: missing, not openable or readable, or not a
    /// regular file; not one that was read and is too large or not UTF-8, nor a failed write.
    /// The one test of it, for every caller that treats a file not there apart from one that is
    /// there and wrong (an exit code, a note instead of a problem, a missing credential).
    pub fn is_missing(&self) -> bool {
        matches!(self, FileError::Io { .. } | FileError::NotAFile { .. })
    }

    /// Whether the file does not exist (callers for whom a missing file means "none").
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Opens `path` for reading without blocking on a FIFO and checks that the handle is a regular
/// file; returns it with its metadata.
pub fn open_regular(
    path: &Path,
    what: &'static str,
) -> Result<(std::fs::File, std::fs::Metadata), FileError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |source| FileError::Io {
        what,
        path: path.to_owned(),
        source,
    };
    use std::os::unix::fs::MetadataExt as _;
    let not_a_file = || FileError::NotAFile {
        what,
        path: path.to_owned(),
    };
    // Looked at before it is opened: opening some devices acts (a watchdog arms, a tape
    // rewinds, a serial line changes state), so anything but a regular file is never opened.
    let before = std::fs::metadata(path).map_err(io)?;
    if !before.is_file() {
        return Err(not_a_file());
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    // And the open handle judged again, so a swap between the look and the open is refused.
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() || (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
        return Err(not_a_file());
    }
    Ok((file, meta))
}

/// Reads the regular file at `path` whole when it holds at most `cap` bytes (see the module doc);
/// `what` names the file's role in errors.
pub fn read_capped(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, FileError> {
    let (file, meta) = open_regular(path, what)?;
    read_open(file, meta.len(), path, cap, what)
}

/// [`read_capped`] of an already opened regular file whose metadata said `len` bytes (for callers
/// that judge the open handle first, e.g. its permission bits).
pub fn read_open(
    file: std::fs::File,
    len: u64,
    path: &Path,
    cap: u64,
    what: &'static str,
) -> Result<Vec<u8>, FileError> {
    let too_large = || FileError::TooLarge {
        what,
        path: path.to_owned(),
        cap,
    };
    if len > cap {
        return Err(too_large());
    }
    // The size the metadata gave, as a hint only: the file may change while it is read.
    let hint = usize::try_from(len.min(cap)).unwrap_or(0).saturating_add(1);
    let mut bytes = Vec::with_capacity(hint.min(1 << 20));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FileError::Io {
            what,
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_capped`], as UTF-8 text.
pub fn read_capped_string(path: &Path, cap: u64, what: &'static str) -> Result<String, FileError> {
    String::from_utf8(read_capped(path, cap, what)?).map_err(|_| FileError::NotUtf8 {
        what,
        path: path.to_owned(),
    })
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically: a temp file in the same directory, `fsync`, `rename` over
/// `path`, then `fsync` of the directory so the rename itself survives a crash. A reader sees the
/// old file or the new one, never a mix; on failure the temp file is removed and `path` is as it was.
/// The last-known-good cards (`control::state_dir`) and the lockfiles (`lock::file`) are both
/// written through here.
pub fn write_atomic(path: &Path, bytes: &[u8], what: &'static str) -> Result<(), FileError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let io = |p: &Path| {
        let p = p.to_owned();
        move |source| FileError::Write {
            what,
            path: p,
            source,
        }
    };
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io(&tmp))?;
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(io(path))?;
        // The rename is only durable once the directory entry is.
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&dir))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a multi-thread runtime of one worker, a read on that worker lets a task spawned while
    /// it blocks still run: the read waits for that task's message and gets it. Without
    /// `block_in_place` the one worker would be stuck in the read and the wait would time out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_blocking_read_lets_the_runtimes_other_tasks_run() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (started_tx, started) = tokio::sync::oneshot::channel();
        // The test's own future runs beside the runtime's worker; the read runs on the worker.
        let read = tokio::spawn(async move {
            let _ = started_tx.send(());
            blocking(|| rx.recv_timeout(std::time::Duration::from_secs(20)))
        });
        started.await.unwrap();
        tokio::spawn(async move {
            let _ = tx.send(());
        });
        let got = read.await.unwrap();
        assert!(got.is_ok(), "the other task did not run during the read");
    }

    /// On a single-threaded runtime (the control plane's own, the CLI's) it simply runs.
    #[tokio::test(flavor = "current_thread")]
    async fn a_blocking_read_on_a_single_threaded_runtime_runs_in_place() {
        assert_eq!(blocking(|| 7), 7);
    }

    #[test]
    fn a_file_up_to_its_cap_is_read_and_one_byte_more_is_refused_naming_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_capped(&p, 10, "test file").unwrap(), b"0123456789");
        let e = read_capped(&p, 9, "test file").unwrap_err();
        assert_eq!(e.kind(), "too_large");
        let text = e.to_string();
        assert!(
            text.contains("cap of 9 bytes") && text.contains("test file"),
            "{text}"
        );
        assert!(
            read_capped(&dir.path().join("missing"), 9, "x")
                .unwrap_err()
                .is_not_found()
        );
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_without_blocking_or_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        // A FIFO without a writer would block a plain open forever; this returns at once.
        for p in [
            fifo.as_path(),
            zero.as_path(),
            Path::new("/dev/zero"),
            dir.path(),
        ] {
            let e = read_capped(p, 1 << 30, "config").unwrap_err();
            assert_eq!(e.kind(), "not_a_file", "{}: {e}", p.display());
        }
    }

    #[test]
    fn text_must_be_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert_eq!(
            read_capped_string(&p, 10, "x").unwrap_err().kind(),
            "not_utf8"
        );
        std::fs::write(&p, "ok").unwrap();
        assert_eq!(read_capped_string(&p, 10, "x").unwrap(), "ok");
    }
}
