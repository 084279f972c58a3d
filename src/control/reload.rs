//! Configuration hot reload on file change and on SIGHUP, and the readiness verdict (file I/O,
//! signals).
//!
//! The whole new file is read (at most the running config's `[limits] max_config_bytes`, through
//! the one bounded reader), parsed and validated first ([`Config::load_capped`]), on a blocking
//! thread: neither the file I/O nor the validation of a 100,000-integration file runs on a
//! thread that serves calls, and every check is linear. A bad one is refused (logged,
//! counted in `a2a_egress_config_reloads_total{result="refused"}`, shown by `/readyz` bounded and
//! without control characters) and the old config keeps serving. A good one is applied by
//! difference (on that same thread): unchanged integrations keep their workers, profiles and
//! caches (no refetch storm); changed ones are rebuilt from their cached card, or refetched when
//! the card's source, trust or credential changed; removed ones leave the snapshot (so they stop
//! routing at once); new ones are fetched.
//!
//! Change detection polls the file (default every second) rather than using inotify through
//! `notify`: it needs no extra crate and works the same on bind mounts, network filesystems and
//! editors that save through a temp file and rename. Each poll compares the file's metadata (size,
//! modification time, inode) and reads and hashes the content only when that moved, or every
//! [`FULL_LOOK_EVERY`] polls in any case (a same-size rewrite within one timestamp tick of a coarse
//! filesystem): hashing a 1,000-integration file every second cost more than the requests it served
//! did. A change must read the same twice, a debounce apart, before it is applied, so a half-written
//! file is not even tried. SIGHUP reloads at once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::card::CardPolicy;
use crate::card::sanitize::{MAX_REPORT_LINE_CHARS, MAX_REPORT_LINES, bounded_report};
use crate::config::{Config, ConfigError, Integration};
use crate::control::refresh::{ControlHandle, lock, needs_refetch};
use crate::state::{IntegrationState, Status};
use crate::types::file::{FileError, read_capped};

/// Default interval between two looks at the config file.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// Polls between two content hashes when the file's metadata did not move.
pub const FULL_LOOK_EVERY: u32 = 30;
/// A changed file must read the same after this long before it is applied.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReloadReport {
    /// New integrations (fetched now).
    pub added: Vec<String>,
    /// Integrations that left the config (no longer routed).
    pub removed: Vec<String>,
    /// Integrations whose settings changed.
    pub changed: Vec<String>,
    /// Of `changed`, those refetched (card URL, origins, CA file, credential or tenant changed).
    pub refetched: Vec<String>,
    /// Integrations left exactly as they were.
    pub unchanged: Vec<String>,
    /// `[client]` changed, so every cached card was recompiled (without fetching).
    pub recompiled_all: bool,
    /// Tables whose changes only take effect after a restart, if they changed.
    pub needs_restart: Vec<RestartTable>,
}

/// A config table read only at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartTable {
    /// `[listen]`: the listeners and the public URL.
    Listen,
    /// `[policy]`: the data plane's request defaults.
    Policy,
    /// `[admin]`: the admin token and refresh rate limit.
    Admin,
    /// `[limits]`: data-plane deadlines and caps.
    Limits,
    /// `[effective_card]`: the signing key (or its file's contents), mode, previous keys, `jku`.
    EffectiveCard,
    /// `[log]`: format, level and access log.
    Log,
    /// `[runtime]`: data-plane threads and work stealing.
    Runtime,
    /// `[telemetry]`: the OTLP exporter (with the `OTEL_*` variables read at start).
    Telemetry,
}

/// The result of a config reload (kept with the metric that counts it).
pub use super::metrics::ReloadResult;

fn same_card_policy(a: &CardPolicy, b: &CardPolicy) -> bool {
    a.max_card_bytes == b.max_card_bytes
        && a.require_signatures == b.require_signatures
        && a.allow_plain_http == b.allow_plain_http
        && a.trusted_keys == b.trusted_keys
}

/// The tables read only at start whose values differ between `old` and `new`.
fn needs_restart(old: &Config, new: &Config) -> Vec<RestartTable> {
    let mut tables = Vec::new();
    // The listeners and the data plane's request defaults are fixed at start.
    if old.listen.proxy != new.listen.proxy
        || old.listen.admin != new.listen.admin
        || old.listen.public_url != new.listen.public_url
    {
        tables.push(RestartTable::Listen);
    }
    if old.policy.default_data_class != new.policy.default_data_class {
        tables.push(RestartTable::Policy);
    }
    if old.admin != new.admin {
        tables.push(RestartTable::Admin);
    }
    if !old.limits.same_at_start(&new.limits) {
        tables.push(RestartTable::Limits);
    }
    if old.card_signing != new.card_signing {
        tables.push(RestartTable::EffectiveCard);
    }
    if old.log != new.log {
        tables.push(RestartTable::Log);
    }
    if old.runtime != new.runtime {
        tables.push(RestartTable::Runtime);
    }
    if old.telemetry != new.telemetry {
        tables.push(RestartTable::Telemetry);
    }
    tables
}

impl ControlHandle {
    /// Applies an already validated config by difference (see the module doc).
    pub fn apply_config(&self, new: Config) -> ReloadReport {
        let old = self.config();
        let mut report = ReloadReport {
            recompiled_all: old.caps != new.caps
                || !same_card_policy(&old.card_policy, &new.card_policy),
            needs_restart: needs_restart(&old, &new),
            ..ReloadReport::default()
        };
        if !report.needs_restart.is_empty() {
            tracing::warn!(tables = ?report.needs_restart, "these settings take effect after a restart");
        }
        let state_dir_changed = old.state_dir != new.state_dir;
        self.inner.config.store(Arc::new(new.clone()));
        if state_dir_changed {
            self.set_state_dir(&new);
        }
        let added = self.apply_membership(&old, &new, &mut report);
        self.apply_changes(&new, &added, &mut report);
        if report.recompiled_all {
            self.recompile_all();
        }
        *lock(&self.inner.reload_refused) = None;
        self.metrics().config_refused.set(0);
        self.metrics()
            .reloads
            .with_label_values(&[ReloadResult::Ok.as_str()])
            .inc();
        tracing::info!(?report, "configuration reloaded");
        report
    }

    /// Removes the integrations that left the config and starts the new ones, in one snapshot
    /// swap: removed ones stop routing in the same instant the new ones appear as pending.
    /// Returns the new ones.
    fn apply_membership(
        &self,
        old: &Config,
        new: &Config,
        report: &mut ReloadReport,
    ) -> Vec<Arc<Integration>> {
        let kept: HashSet<&str> = new.integrations.iter().map(|n| n.name.as_str()).collect();
        let removed: Vec<String> = old
            .integrations
            .iter()
            .filter(|o| !kept.contains(o.name.as_str()))
            .map(|o| o.name.clone())
            .collect();
        let added: Vec<Arc<Integration>> = new
            .integrations
            .iter()
            .filter(|n| self.worker_integration(&n.name).is_none())
            .map(|n| Arc::new(n.clone()))
            .collect();
        self.store().rcu(|cur| {
            let mut next = cur.clone();
            for name in &removed {
                next.integrations.remove(name);
            }
            for i in &added {
                next.integrations.insert(
                    i.name.clone(),
                    Arc::new(IntegrationState::pending(i.clone())),
                );
            }
            next
        });
        for name in &removed {
            self.stop_worker(name);
            report.removed.push(name.clone());
        }
        for i in &added {
            self.spawn_worker(i.clone());
            report.added.push(i.name.clone());
        }
        added
    }

    /// Hands each kept integration whose settings changed to its worker (refetching when the
    /// card's source, trust or credential changed); the rest keep their state.
    fn apply_changes(&self, new: &Config, added: &[Arc<Integration>], report: &mut ReloadReport) {
        let added: HashSet<&str> = added.iter().map(|a| a.name.as_str()).collect();
        for n in &new.integrations {
            if added.contains(n.name.as_str()) {
                continue;
            }
            let Some(cur) = self.worker_integration(&n.name) else {
                continue;
            };
            if *cur == *n {
                report.unchanged.push(n.name.clone());
                continue;
            }
            let refetch = needs_refetch(&cur, n);
            report.changed.push(n.name.clone());
            if refetch {
                report.refetched.push(n.name.clone());
            }
            self.reconfigure(Arc::new(n.clone()), refetch);
        }
    }

    /// Loads, validates and applies the config file on a blocking thread, off the runtime that
    /// serves calls (see [`reload_blocking`](Self::reload_blocking)); a bad file is refused and
    /// the old config keeps serving.
    pub async fn reload_from(&self, path: &Path) -> Result<ReloadReport, ConfigError> {
        let (handle, owned) = (self.clone(), path.to_owned());
        let gauge = self.metrics().reload_in_progress.clone();
        gauge.set(1);
        let done = tokio::task::spawn_blocking(move || handle.reload_blocking(&owned)).await;
        gauge.set(0);
        match done {
            Ok(result) => result,
            // A bug in reading or checking the file: refused like a bad file, so the reloader
            // (file watch, SIGHUP) keeps running and the old config keeps serving.
            Err(e) if e.is_panic() => {
                tracing::error!(path = %path.display(), "reading the config panicked; the reload is refused");
                Err(ConfigError::Invalid {
                    path: path.to_owned(),
                    problems: vec![
                        "reading or checking the file failed inside the gateway (a bug); the running configuration is kept".to_owned(),
                    ],
                })
            }
            // Only when the runtime shuts down before the thread started: nothing was read.
            Err(_) => Err(ConfigError::Read(crate::types::file::FileError::Io {
                what: "config",
                path: path.to_owned(),
                source: std::io::Error::other("the runtime is shutting down"),
            })),
        }
    }

    /// Reads the config file (at most the running config's `[limits] max_config_bytes`),
    /// validates it and applies it, or refuses it: logged, counted, and its message (bounded,
    /// without control characters) kept for `/readyz`. Blocking (file I/O, and validation that
    /// takes a while for a large file): call it from a blocking thread.
    pub fn reload_blocking(&self, path: &Path) -> Result<ReloadReport, ConfigError> {
        let cap = self.config().limits.max_config_bytes;
        // One CPU fewer than the process may use (at least the calling thread): a large file's
        // parse leaves a CPU to the data plane (read now, as the data plane's count was at start).
        let threads = crate::types::cpus::CpuLimits::read()
            .threads()
            .saturating_sub(1);
        match Config::load_capped_on(path, cap, threads.max(1)) {
            Ok(new) => Ok(self.apply_config(new)),
            Err(e) => {
                let shown = bounded_report(&e.to_string(), MAX_REPORT_LINE_CHARS, MAX_REPORT_LINES);
                tracing::error!(error = %shown, "configuration reload refused; the previous configuration keeps serving");
                self.metrics()
                    .reloads
                    .with_label_values(&[ReloadResult::Refused.as_str()])
                    .inc();
                *lock(&self.inner.reload_refused) = Some(shown);
                self.metrics().config_refused.set(1);
                Err(e)
            }
        }
    }

    /// The readiness verdict for `/readyz`.
    pub fn readiness(&self) -> Readiness {
        let snap = self.store().load();
        let mut r = Readiness {
            ready: snap.ready(),
            config_refused: self.reload_refused(),
            state_dir: lock(&self.inner.state_problem).as_deref().map(shown),
            ..Readiness::default()
        };
        for (name, s) in &snap.integrations {
            match &s.status {
                Status::Pending => r.pending.push(name.clone()),
                Status::Unusable { reason, .. } | Status::Blocked { reason, .. } => {
                    r.unusable.push(IntegrationIssue {
                        integration: name.clone(),
                        reason: shown(reason),
                    })
                }
                Status::Usable { .. } => {}
            }
            if let Some(d) = &s.freshness.degraded {
                r.degraded.push(IntegrationIssue {
                    integration: name.clone(),
                    reason: shown(&d.reason),
                });
            }
            if s.freshness.unrevalidated {
                r.unrevalidated.push(name.clone());
            }
        }
        r
    }
}

/// Lines of one reason `/readyz` shows.
const MAX_REASON_LINES: usize = 4;

/// A reason as `/readyz` shows it: bounded and without control characters, whoever wrote it (a
/// card's validation problems, an agent's error message, a file's I/O error).
fn shown(reason: &str) -> String {
    bounded_report(reason, MAX_REPORT_LINE_CHARS, MAX_REASON_LINES)
}

/// `/readyz`: ready once every integration has a usable profile or a definite verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// No integration is still pending.
    pub ready: bool,
    /// Integrations without a verdict yet.
    pub pending: Vec<String>,
    /// Integrations with a definite "cannot use" verdict.
    pub unusable: Vec<IntegrationIssue>,
    /// Integrations served from their last good profile after a failed refresh.
    pub degraded: Vec<IntegrationIssue>,
    /// Integrations served from disk, not yet confirmed by a fetch.
    pub unrevalidated: Vec<String>,
    /// The last refused config reload (the previous config keeps serving).
    pub config_refused: Option<String>,
    /// Why last-known-good cards are not being saved (serving goes on; a restart while an agent is
    /// down would have no card to start from).
    pub state_dir: Option<String>,
}

/// One integration and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntegrationIssue {
    /// The integration.
    pub integration: String,
    /// Why.
    pub reason: String,
}

/// What one read of the config file found: its content's hash, a refusal of the file itself
/// (over the cap, not a regular file, not UTF-8: worth a reload, which reports it), or nothing
/// to act on (missing for a moment during a rename, or an I/O error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    Hash([u8; 32]),
    Refused(&'static str),
    Nothing,
}

/// Reads the file (at most `cap` bytes, through the one bounded reader). Blocking.
fn look(path: &Path, cap: u64) -> Look {
    match read_capped(path, cap, "config") {
        Ok(b) => match std::str::from_utf8(&b) {
            Ok(_) => Look::Hash(Sha256::digest(&b).into()),
            Err(_) => Look::Refused("not_utf8"),
        },
        Err(FileError::Io { .. }) => Look::Nothing,
        Err(e) => Look::Refused(e.kind()),
    }
}

/// What a poll compares before reading the file: a rename over it changes the inode, a write its
/// size or modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        inode: m.ino(),
    })
}

/// Whether a poll must read the file: its metadata moved (or cannot be read), or `quiet` polls
/// have passed since the last read.
fn must_read(last: Option<Stamp>, now: Option<Stamp>, quiet: u32) -> bool {
    now.is_none() || last != now || quiet >= FULL_LOOK_EVERY
}

/// Runs `f` on a blocking thread (file I/O stays off the runtime that serves calls).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// Watches `path` (metadata every `poll`, content when it moved, debounced) and SIGHUP, reloading
/// on either. Every read of the file is on a blocking thread, with the running config's cap.
/// Runs until the returned task is aborted.
pub fn spawn_reloader(
    handle: ControlHandle,
    path: PathBuf,
    poll: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; file changes still reload");
                None
            }
        };
        let cap = |h: &ControlHandle| h.config().limits.max_config_bytes;
        let (p, c) = (path.clone(), cap(&handle));
        let (mut seen, mut seen_stamp) = blocking(move || (look(&p, c), stamp(&p)))
            .await
            .unwrap_or((Look::Nothing, None));
        let mut quiet = 0u32;
        let mut tick = tokio::time::interval(poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let by_signal = tokio::select! {
                _ = tick.tick() => false,
                Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => true,
            };
            if by_signal {
                tracing::info!("SIGHUP: reloading configuration");
                let (p, c) = (path.clone(), cap(&handle));
                seen = blocking(move || look(&p, c)).await.unwrap_or(seen);
            } else {
                let p = path.clone();
                let now_stamp = blocking(move || stamp(&p)).await.flatten();
                quiet += 1;
                if !must_read(seen_stamp, now_stamp, quiet) {
                    continue;
                }
                let moved = seen_stamp != now_stamp;
                quiet = 0;
                seen_stamp = now_stamp;
                let Some(now) = changed(&path, cap(&handle), seen, moved).await else {
                    continue;
                };
                seen = now;
            }
            let _ = handle.reload_from(&path).await;
        }
    })
}

/// The file's look when it changed since `seen` and reads the same after [`DEBOUNCE`] (a
/// half-written file is not even tried); `None` otherwise. A refused file has no content to
/// compare, so one refused the same way counts as changed when its metadata `moved` (a FIFO in
/// place of a link to `/dev/zero`), and not on the periodic look.
async fn changed(path: &Path, cap: u64, seen: Look, moved: bool) -> Option<Look> {
    let p = path.to_owned();
    let now = blocking(move || look(&p, cap)).await?;
    let refused_anew = moved && matches!(now, Look::Refused(_));
    if (now == seen && !refused_anew) || now == Look::Nothing {
        return None;
    }
    tokio::time::sleep(DEBOUNCE).await;
    let p = path.to_owned();
    let again = blocking(move || look(&p, cap)).await?;
    // Still being written when it differs: look again next tick.
    (again == now).then_some(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Config {
        let text = format!("[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n{extra}");
        Config::parse(&text, std::path::Path::new("/etc/gw/gateway.toml")).expect("valid")
    }

    #[test]
    fn a_poll_reads_the_file_only_when_its_metadata_moved_or_after_enough_quiet_polls() {
        let at = |len, inode| {
            Some(Stamp {
                len,
                modified: Some(std::time::UNIX_EPOCH),
                inode,
            })
        };
        assert!(!must_read(at(10, 1), at(10, 1), 1));
        assert!(!must_read(at(10, 1), at(10, 1), FULL_LOOK_EVERY - 1));
        assert!(must_read(at(10, 1), at(10, 1), FULL_LOOK_EVERY));
        assert!(
            must_read(at(10, 1), at(11, 1), 1),
            "a write changes the size"
        );
        assert!(
            must_read(at(10, 1), at(10, 2), 1),
            "a rename changes the inode"
        );
        assert!(
            must_read(at(10, 1), None, 1),
            "an unreadable file is looked at"
        );
        assert!(
            must_read(None, at(10, 1), 1),
            "a file that appeared is read"
        );
    }

    #[test]
    fn a_changed_log_table_needs_a_restart_and_an_unchanged_one_does_not() {
        let old = config("[log]\nformat = \"text\"\n");
        assert!(needs_restart(&old, &config("[log]\nformat = \"text\"\n")).is_empty());
        for changed in [
            "[log]\nformat = \"json\"\n",
            "[log]\nlevel = \"debug\"\n",
            "[log]\naccess = \"off\"\n",
        ] {
            assert_eq!(
                needs_restart(&old, &config(changed)),
                [RestartTable::Log],
                "{changed}"
            );
        }
    }

    #[test]
    fn a_changed_telemetry_table_needs_a_restart() {
        let old = config("[telemetry]\nsampling = 0.5\n");
        assert!(needs_restart(&old, &config("[telemetry]\nsampling = 0.5\n")).is_empty());
        for changed in [
            "",
            "[telemetry]\nsampling = 1.0\n",
            "[telemetry]\nprotocol = \"http\"\n",
        ] {
            assert_eq!(
                needs_restart(&old, &config(changed)),
                [RestartTable::Telemetry],
                "{changed}"
            );
        }
    }

    #[test]
    fn a_changed_runtime_table_needs_a_restart() {
        let old = config("[runtime]\nworker_threads = 2\n");
        assert!(needs_restart(&old, &config("[runtime]\nworker_threads = 2\n")).is_empty());
        for changed in [
            "[runtime]\nworker_threads = 4\n",
            // Unset is not 2: it is the CPUs, read at the next start.
            "",
            "[runtime]\nwork_stealing = false\n",
        ] {
            assert_eq!(
                needs_restart(&old, &config(changed)),
                [RestartTable::Runtime],
                "{changed}"
            );
        }
    }
}
