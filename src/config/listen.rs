//! The `[listen]`, `[admin]` and `[limits]` tables: who may reach the gateway and how much of it one
//! caller may hold (raw serde model and validation; reads the admin token file, nothing else,
//! through the one bounded reader, [`crate::types::file`]).
//!
//! Both listeners default to loopback. The data plane adds an integration's credential to every
//! call it forwards, so a data plane anyone can reach lends that credential to anyone; the admin
//! listener can force refreshes. Listening elsewhere is therefore an explicit choice
//! (`listen.allow_non_loopback`), and an admin listener off loopback must have a token.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::types::parse_duration;

/// Default request-header deadline: from the first byte of a request to the end of its header.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default request-body deadline: from the end of the header to the end of the body.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default keep-alive idle timeout (also the wait for a new connection's first byte).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default total deadline for an agent's answer head: from sending the request (connecting
/// included, across the pooled-connection retries) to the final response header. Generous because
/// a blocking `SendMessage` is answered only when the agent's work is done, which may take a minute
/// or more for an agent that calls a model and tools.
pub const DEFAULT_UPSTREAM_HEADER_TIMEOUT: Duration = Duration::from_secs(120);
/// Default total deadline for a unary answer's body, from its header to its last byte.
pub const DEFAULT_UPSTREAM_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// Default longest silence between two reads from an agent: what bounds a stream, which has no
/// total deadline (SDK agents send an SSE ping every 15 s).
pub const DEFAULT_UPSTREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default longest time one write of an answer to a caller may wait for the caller to read: a
/// caller that stays connected but stops reading holds its call, its agent connection and its
/// in-flight slot no longer than this (the agent side's deadlines cannot see it: the gateway is
/// writing, not reading). A write of a large piece that progresses slowly only needs to finish
/// within it, so a slow reader is cut only at a rate far below any real one.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on open downstream connections of the data plane.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default cap on data-plane requests in progress (each may hold a body up to `max_body_bytes`).
pub const DEFAULT_MAX_INFLIGHT: usize = 256;
/// Default cap on open admin connections (scrapers and operators; more are closed at accept).
pub const DEFAULT_ADMIN_MAX_CONNECTIONS: usize = 64;
/// Default shortest interval between two forced refreshes of one integration.
pub const DEFAULT_REFRESH_MIN_INTERVAL: Duration = Duration::from_secs(10);
/// Largest accepted deadline or timeout in `[limits]`.
const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// Largest accepted connection or in-flight cap.
const MAX_CAP: usize = 1_000_000;
/// Default (and largest) `[limits] max_config_bytes`: the cap on the config file's size. At start
/// the file is read with this cap (its own `[limits]` is not known before it is read), so a
/// larger value could never be started from; a smaller one applies to every reload and to the
/// file itself (a config over its own cap is refused). 32 MiB holds about 200,000 integrations
/// of the usual size.
pub const DEFAULT_MAX_CONFIG_BYTES: u64 = 32 * 1024 * 1024;
/// Smallest accepted `[limits] max_config_bytes`.
pub const MIN_MAX_CONFIG_BYTES: u64 = 4 * 1024;
/// Cap on a private key or token file read by [`read_private_file`]: such files hold one key or
/// one token, a few KiB at most.
pub const MAX_PRIVATE_FILE_BYTES: u64 = 64 * 1024;
/// Shortest accepted admin token: a bearer token is the admin listener's only protection.
const MIN_TOKEN_LEN: usize = 16;

/// The raw `[listen]` table.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawListen {
    /// Data plane address, default `127.0.0.1:7411` (port 0 picks a free port).
    #[serde(default = "default_proxy")]
    pub proxy: String,
    /// Admin address (health, readiness, metrics), default `127.0.0.1:7412`.
    #[serde(default = "default_admin")]
    pub admin: String,
    /// The gateway's own base URL as callers reach it, written into effective cards
    /// (default `http://{proxy address}` once bound).
    #[serde(default)]
    pub public_url: Option<String>,
    /// Allow `proxy`/`admin` on a non-loopback address (default false).
    #[serde(default)]
    pub allow_non_loopback: bool,
}

fn default_proxy() -> String {
    "127.0.0.1:7411".into()
}
fn default_admin() -> String {
    "127.0.0.1:7412".into()
}

impl Default for RawListen {
    fn default() -> Self {
        RawListen {
            proxy: default_proxy(),
            admin: default_admin(),
            public_url: None,
            allow_non_loopback: false,
        }
    }
}

/// Validated `[listen]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// Data plane address.
    pub proxy: SocketAddr,
    /// Admin address.
    pub admin: SocketAddr,
    /// Explicit public base URL (no trailing slash); `None` means `http://{bound proxy address}`.
    pub public_url: Option<String>,
}

/// The raw `[admin]` table.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    /// File holding the bearer token the admin listener's mutating routes require (relative to
    /// the config folder; trailing whitespace trimmed; not accessible by group or others).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Shortest interval between two forced refreshes of one integration (default `"10s"`,
    /// `"0s"` = no limit).
    #[serde(default)]
    pub refresh_min_interval: Option<String>,
    /// Most open admin connections (default 64); more are closed at once.
    #[serde(default)]
    pub max_connections: Option<usize>,
}

/// The admin bearer token. Only its SHA-256 digest is kept, and it is compared in constant time,
/// so neither the token nor how much of a guess matched can leak through memory dumps or timing.
#[derive(Clone)]
pub struct AdminToken {
    digest: [u8; 32],
}

impl AdminToken {
    /// Wraps a token (as read from its file, already trimmed).
    pub fn new(token: &str) -> AdminToken {
        AdminToken {
            digest: Sha256::digest(token.as_bytes()).into(),
        }
    }

    /// Whether `presented` is the token. Both sides are hashed first, so the comparison takes the
    /// same time whatever the presented value's length or content.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let d: [u8; 32] = Sha256::digest(presented).into();
        bool::from(d.ct_eq(&self.digest))
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

impl PartialEq for AdminToken {
    fn eq(&self, other: &Self) -> bool {
        bool::from(self.digest.ct_eq(&other.digest))
    }
}
impl Eq for AdminToken {}

/// Validated `[admin]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admin {
    /// The token mutating admin routes require; `None` = open (only allowed on loopback).
    pub token: Option<AdminToken>,
    /// The file the token was read from (resolved against the config folder), for the commands
    /// that talk to the admin listener (`status`, `select`).
    pub token_file: Option<PathBuf>,
    /// Shortest interval between two forced refreshes of one integration (zero = no limit).
    pub refresh_min_interval: Duration,
    /// Most open admin connections.
    pub max_connections: usize,
}

impl Default for Admin {
    fn default() -> Self {
        Admin {
            token: None,
            token_file: None,
            refresh_min_interval: DEFAULT_REFRESH_MIN_INTERVAL,
            max_connections: DEFAULT_ADMIN_MAX_CONNECTIONS,
        }
    }
}

/// The raw `[limits]` table (durations as `"300ms"`, `"10s"`, …).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Deadline for a request header, from its first byte (default `"10s"`).
    #[serde(default)]
    pub header_timeout: Option<String>,
    /// Deadline for a request body, from the end of its header (default `"30s"`).
    #[serde(default)]
    pub body_timeout: Option<String>,
    /// Keep-alive idle timeout, and the wait for a new connection's first byte (default `"60s"`).
    #[serde(default)]
    pub idle_timeout: Option<String>,
    /// Most open downstream connections (default 1024).
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Most requests in progress (default 256).
    #[serde(default)]
    pub max_inflight: Option<usize>,
    /// Total deadline for an agent's answer head (default `"120s"`).
    #[serde(default)]
    pub upstream_header_timeout: Option<String>,
    /// Total deadline for a unary answer's body, from its head (default `"60s"`).
    #[serde(default)]
    pub upstream_body_timeout: Option<String>,
    /// Longest silence between two reads from an agent, the only bound of a stream (default `"300s"`).
    #[serde(default)]
    pub upstream_idle_timeout: Option<String>,
    /// Longest wait for one write of an answer to a caller (default `"30s"`).
    #[serde(default)]
    pub write_timeout: Option<String>,
    /// Cap on the config file's size in bytes (default and most 32 MiB): a reload of a larger
    /// file is refused without reading it, and the running config keeps serving.
    #[serde(default)]
    pub max_config_bytes: Option<u64>,
}

/// Validated `[limits]`: what one slow or greedy caller can hold of the data plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Request-header deadline.
    pub header_timeout: Duration,
    /// Request-body deadline.
    pub body_timeout: Duration,
    /// Keep-alive idle timeout.
    pub idle_timeout: Duration,
    /// Connection cap.
    pub max_connections: usize,
    /// In-flight request cap.
    pub max_inflight: usize,
    /// Agent answer-head deadline (total, across connection retries).
    pub upstream_header_timeout: Duration,
    /// Unary answer-body deadline (total, from the head).
    pub upstream_body_timeout: Duration,
    /// Longest silence between two reads from an agent (streams' only bound).
    pub upstream_idle_timeout: Duration,
    /// Longest wait for one write of an answer to a caller that does not read.
    pub write_timeout: Duration,
    /// Cap on the config file's size (applies to the next reload as soon as a config with it is
    /// running; no restart needed).
    pub max_config_bytes: u64,
}

impl Limits {
    /// Whether the settings read only at start (all but `max_config_bytes`) are the same.
    pub fn same_at_start(&self, other: &Limits) -> bool {
        Limits {
            max_config_bytes: 0,
            ..*self
        } == Limits {
            max_config_bytes: 0,
            ..*other
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_inflight: DEFAULT_MAX_INFLIGHT,
            upstream_header_timeout: DEFAULT_UPSTREAM_HEADER_TIMEOUT,
            upstream_body_timeout: DEFAULT_UPSTREAM_BODY_TIMEOUT,
            upstream_idle_timeout: DEFAULT_UPSTREAM_IDLE_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            max_config_bytes: DEFAULT_MAX_CONFIG_BYTES,
        }
    }
}

fn socket_addr(key: &str, v: &str, problems: &mut Vec<String>) -> SocketAddr {
    v.parse().unwrap_or_else(|_| {
        problems.push(format!("{key}: {v:?} is not an IP:port socket address"));
        SocketAddr::from(([127, 0, 0, 1], 0))
    })
}

/// Whether `addr` is on loopback (an IPv4-mapped IPv6 loopback address counts).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

pub(super) fn listen(raw: &RawListen, problems: &mut Vec<String>) -> Listen {
    let proxy = socket_addr("listen.proxy", &raw.proxy, problems);
    let admin = socket_addr("listen.admin", &raw.admin, problems);
    if proxy == admin && proxy.port() != 0 {
        problems.push("listen.admin: must differ from listen.proxy".into());
    }
    if !raw.allow_non_loopback {
        for (key, addr, why) in [
            (
                "listen.proxy",
                proxy,
                "anyone who reaches it may send calls with the integrations' credentials",
            ),
            (
                "listen.admin",
                admin,
                "anyone who reaches it may read metrics and force refreshes",
            ),
        ] {
            if !is_loopback(&addr) {
                problems.push(format!(
                    "{key}: {addr} is not a loopback address ({why}); set \
                     listen.allow_non_loopback = true to listen there on purpose"
                ));
            }
        }
    }
    let public_url = raw
        .public_url
        .as_ref()
        .and_then(|p| match url::Url::parse(p) {
            Ok(u)
                if matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.query().is_none()
                    && u.fragment().is_none()
                    && u.username().is_empty() =>
            {
                Some(p.trim_end_matches('/').to_owned())
            }
            _ => {
                problems.push(format!(
                "listen.public_url: {p:?} is not an absolute http(s) URL without query or fragment"
            ));
                None
            }
        });
    Listen {
        proxy,
        admin,
        public_url,
    }
}

/// Why a secret file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFileError {
    /// The file cannot be read (or its metadata cannot), is over its cap or is not UTF-8.
    #[error(transparent)]
    File(#[from] crate::types::file::FileError),
    /// The path is a directory, a device or a socket.
    #[error("{} is not a regular file", shown(path, target.as_deref()))]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it links to, when it is a symbolic link.
        target: Option<PathBuf>,
    },
    /// Group or others may access it.
    #[error(
        "{} is accessible by group or others (mode {mode:03o}); make it private to the \
         gateway's user (chmod 600)",
        shown(path, target.as_deref())
    )]
    NotPrivate {
        /// The file as configured.
        path: PathBuf,
        /// What it links to, when it is a symbolic link: the file whose mode this is.
        target: Option<PathBuf>,
        /// Its permission bits.
        mode: u32,
    },
}

/// `path`, and the file it links to when that differs.
fn shown(path: &Path, target: Option<&Path>) -> String {
    match target {
        Some(t) if t != path => format!("{} (a link to {})", path.display(), t.display()),
        _ => path.display().to_string(),
    }
}

impl PrivateFileError {
    /// Whether the file is not there to read (missing, unreadable, not a regular file:
    /// [`FileError::is_missing`](crate::types::file::FileError::is_missing)): what an offline
    /// check notes instead of refusing ([`crate::config::Config::load_offline`]).
    pub fn is_missing(&self) -> bool {
        match self {
            PrivateFileError::File(e) => e.is_missing(),
            PrivateFileError::NotAFile { .. } => true,
            PrivateFileError::NotPrivate { .. } => false,
        }
    }

    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            PrivateFileError::File(e) => e.kind(),
            PrivateFileError::NotAFile { .. } => "not_a_file",
            PrivateFileError::NotPrivate { .. } => "not_private",
        }
    }
}

/// Why an admin token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file itself.
    #[error(transparent)]
    File(#[from] PrivateFileError),
    /// Shorter than the minimum token length (16 characters).
    #[error("the token in {} is shorter than {MIN_TOKEN_LEN} characters", path.display())]
    TooShort {
        /// The file.
        path: PathBuf,
    },
    /// A space, control or non-ASCII character: it could never match `Authorization: Bearer <token>`.
    #[error("the token in {} must be visible ASCII characters without spaces", path.display())]
    NotVisibleAscii {
        /// The file.
        path: PathBuf,
    },
    /// The placeholder of the example Kubernetes Secret (anything starting with
    /// [`PLACEHOLDER_TOKEN_PREFIX`]): everyone who read the example knows it.
    #[error(
        "the token in {} is the example's placeholder; replace it with a random token (e.g. `openssl rand -hex 32`)",
        path.display()
    )]
    Placeholder {
        /// The file.
        path: PathBuf,
    },
}

impl TokenError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            TokenError::File(e) => e.kind(),
            TokenError::TooShort { .. } => "too_short",
            TokenError::NotVisibleAscii { .. } => "not_visible_ascii",
            TokenError::Placeholder { .. } => "placeholder",
        }
    }
}

/// Reads a secret file, refusing one that group or others may access (as OpenSSH does for
/// private keys): a secret readable by every local user protects nothing.
///
/// The mode is read from the open handle and the text from that same handle, so the file judged
/// is the file read even if the path is swapped meanwhile. The handle is opened without blocking
/// and must be a regular file ([`crate::types::file`]); at most [`MAX_PRIVATE_FILE_BYTES`] are
/// read. Errors about a symbolic link name its target too, the file whose mode is meant.
pub fn read_private_file(path: &Path) -> Result<String, PrivateFileError> {
    use crate::types::file::{self, FileError};
    use std::os::unix::fs::PermissionsExt as _;
    const WHAT: &str = "private file";
    let target = || {
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.file_type().is_symlink())
            .then(|| std::fs::canonicalize(path).ok())
            .flatten()
    };
    let (handle, meta) = file::open_regular(path, WHAT).map_err(|e| match e {
        FileError::NotAFile { .. } => PrivateFileError::NotAFile {
            path: path.to_owned(),
            target: target(),
        },
        other => PrivateFileError::File(other),
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(PrivateFileError::NotPrivate {
            path: path.to_owned(),
            target: target(),
            mode,
        });
    }
    let bytes = file::read_open(handle, meta.len(), path, MAX_PRIVATE_FILE_BYTES, WHAT)?;
    String::from_utf8(bytes).map_err(|_| {
        PrivateFileError::File(FileError::NotUtf8 {
            what: WHAT,
            path: path.to_owned(),
        })
    })
}

fn token(file: &Path) -> Result<AdminToken, TokenError> {
    let text = read_private_file(file)?;
    let t = text.trim_end();
    if t.len() < MIN_TOKEN_LEN {
        return Err(TokenError::TooShort {
            path: file.to_owned(),
        });
    }
    if !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenError::NotVisibleAscii {
            path: file.to_owned(),
        });
    }
    if t.to_ascii_lowercase().starts_with(PLACEHOLDER_TOKEN_PREFIX) {
        return Err(TokenError::Placeholder {
            path: file.to_owned(),
        });
    }
    Ok(AdminToken::new(t))
}

/// How the example Kubernetes Secret's placeholder values start
/// (`replace-with-at-least-16-visible-ascii-characters`): an admin token that starts so is refused.
pub const PLACEHOLDER_TOKEN_PREFIX: &str = "replace-with-";

/// Checks `[admin]`. With `notes` (an offline check), a token file that is not there is a note,
/// not a problem.
pub(super) fn admin(
    raw: &RawAdmin,
    listen: &Listen,
    base: &Path,
    problems: &mut Vec<String>,
    notes: Option<&mut Vec<String>>,
) -> Admin {
    let token_file = raw.token_file.as_ref().map(|f| base.join(f));
    let token = token_file.as_ref().and_then(|f| match token(f) {
        Ok(t) => Some(t),
        Err(TokenError::File(e)) if e.is_missing() && notes.is_some() => {
            if let Some(n) = notes {
                n.push(format!(
                    "admin.token_file: not read ({e}); serve refuses to start without it"
                ));
            }
            None
        }
        Err(why) => {
            problems.push(format!("admin.token_file: {why}"));
            None
        }
    });
    if raw.token_file.is_none() && !is_loopback(&listen.admin) {
        problems.push(format!(
            "admin.token_file: required when listen.admin ({}) is not on loopback",
            listen.admin
        ));
    }
    let refresh_min_interval = match &raw.refresh_min_interval {
        None => DEFAULT_REFRESH_MIN_INTERVAL,
        Some(text) => match parse_duration(text) {
            Ok(d) if d <= Duration::from_secs(86_400) => d,
            Ok(_) => {
                problems.push("admin.refresh_min_interval: must be at most 1d".into());
                DEFAULT_REFRESH_MIN_INTERVAL
            }
            Err(e) => {
                problems.push(format!("admin.refresh_min_interval: {e}"));
                DEFAULT_REFRESH_MIN_INTERVAL
            }
        },
    };
    let max_connections = match raw.max_connections {
        None => DEFAULT_ADMIN_MAX_CONNECTIONS,
        Some(n) if (1..=MAX_CAP).contains(&n) => n,
        Some(n) => {
            problems.push(format!(
                "admin.max_connections: {n} is outside 1..={MAX_CAP}"
            ));
            DEFAULT_ADMIN_MAX_CONNECTIONS
        }
    };
    Admin {
        token,
        token_file,
        refresh_min_interval,
        max_connections,
    }
}

pub(super) fn limits(raw: &RawLimits, problems: &mut Vec<String>) -> Limits {
    let d = Limits::default();
    let mut timeout = |key: &str, v: &Option<String>, default: Duration| {
        let Some(text) = v else { return default };
        match parse_duration(text) {
            Ok(t) if !t.is_zero() && t <= MAX_TIMEOUT => t,
            Ok(_) => {
                problems.push(format!("limits.{key}: must be more than 0s and at most 1h"));
                default
            }
            Err(e) => {
                problems.push(format!("limits.{key}: {e}"));
                default
            }
        }
    };
    let header_timeout = timeout("header_timeout", &raw.header_timeout, d.header_timeout);
    let body_timeout = timeout("body_timeout", &raw.body_timeout, d.body_timeout);
    let idle_timeout = timeout("idle_timeout", &raw.idle_timeout, d.idle_timeout);
    let upstream_header_timeout = timeout(
        "upstream_header_timeout",
        &raw.upstream_header_timeout,
        d.upstream_header_timeout,
    );
    let upstream_body_timeout = timeout(
        "upstream_body_timeout",
        &raw.upstream_body_timeout,
        d.upstream_body_timeout,
    );
    let upstream_idle_timeout = timeout(
        "upstream_idle_timeout",
        &raw.upstream_idle_timeout,
        d.upstream_idle_timeout,
    );
    let write_timeout = timeout("write_timeout", &raw.write_timeout, d.write_timeout);
    let mut cap = |key: &str, v: Option<usize>, default: usize| match v {
        None => default,
        Some(n) if (1..=MAX_CAP).contains(&n) => n,
        Some(n) => {
            problems.push(format!("limits.{key}: {n} is outside 1..={MAX_CAP}"));
            default
        }
    };
    Limits {
        header_timeout,
        body_timeout,
        idle_timeout,
        max_connections: cap("max_connections", raw.max_connections, d.max_connections),
        max_inflight: cap("max_inflight", raw.max_inflight, d.max_inflight),
        upstream_header_timeout,
        upstream_body_timeout,
        upstream_idle_timeout,
        write_timeout,
        max_config_bytes: max_config_bytes(raw.max_config_bytes, problems),
    }
}

fn max_config_bytes(raw: Option<u64>, problems: &mut Vec<String>) -> u64 {
    match raw {
        None => DEFAULT_MAX_CONFIG_BYTES,
        Some(n) if (MIN_MAX_CONFIG_BYTES..=DEFAULT_MAX_CONFIG_BYTES).contains(&n) => n,
        Some(n) => {
            problems.push(format!(
                "limits.max_config_bytes: {n} is outside \
                 {MIN_MAX_CONFIG_BYTES}..={DEFAULT_MAX_CONFIG_BYTES} (the file is read with the \
                 largest at start, before its own [limits] is known)"
            ));
            DEFAULT_MAX_CONFIG_BYTES
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;
    use std::time::Duration;

    use crate::config::{Config, ConfigError};

    fn problems(text: &str, dir: &Path) -> Vec<String> {
        match Config::parse(text, &dir.join("g.toml")) {
            Err(ConfigError::Invalid { problems, .. }) => problems,
            other => panic!("expected an invalid config, got {other:?}"),
        }
    }

    fn write_token(dir: &Path, name: &str, text: &str, mode: u32) {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_opt_in_allows_non_loopback_listeners_and_the_admin_one_needs_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let open = "[listen]\nallow_non_loopback = true\nproxy = \"0.0.0.0:7411\"\n";
        let c = Config::parse(open, &dir.path().join("g.toml")).unwrap();
        assert_eq!(c.listen.proxy.to_string(), "0.0.0.0:7411");

        let admin = "[listen]\nallow_non_loopback = true\nadmin = \"0.0.0.0:7412\"\n";
        let p = problems(admin, dir.path());
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("admin.token_file: required"), "{p:?}");

        write_token(dir.path(), "t", "0123456789abcdef\n", 0o600);
        let c = Config::parse(
            &format!("{admin}[admin]\ntoken_file = \"t\"\n"),
            &dir.path().join("g.toml"),
        )
        .unwrap();
        let t = c.admin.token.expect("token loaded");
        assert!(t.matches(b"0123456789abcdef"));
        assert!(!t.matches(b"0123456789abcdeF"));
        assert!(!t.matches(b"0123456789abcdef\n"));
        assert_eq!(format!("{t:?}"), "AdminToken(<redacted>)");
    }

    #[test]
    fn a_loopback_address_in_any_spelling_needs_no_opt_in() {
        for addr in [
            "127.0.0.1:1",
            "127.3.4.5:1",
            "[::1]:1",
            "[::ffff:127.0.0.1]:1",
        ] {
            let text = format!("[listen]\nproxy = \"{addr}\"\n");
            Config::parse(&text, Path::new("g.toml")).unwrap_or_else(|e| panic!("{addr}: {e}"));
        }
    }

    #[test]
    fn a_private_file_behind_a_link_is_judged_and_named_by_its_target() {
        let dir = tempfile::tempdir().unwrap();
        write_token(dir.path(), "shared", "0123456789abcdef", 0o644);
        write_token(dir.path(), "private", "0123456789abcdef", 0o600);
        std::os::unix::fs::symlink(dir.path().join("shared"), dir.path().join("to-shared"))
            .unwrap();
        std::os::unix::fs::symlink(dir.path().join("private"), dir.path().join("to-private"))
            .unwrap();
        let err = super::read_private_file(&dir.path().join("to-shared")).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.kind(), "not_private");
        assert!(
            text.contains(&dir.path().join("to-shared").display().to_string())
                && text.contains(&dir.path().join("shared").display().to_string()),
            "{text}"
        );
        assert_eq!(
            super::read_private_file(&dir.path().join("to-private")).unwrap(),
            "0123456789abcdef"
        );
    }

    #[test]
    fn token_files_must_be_private_long_and_printable() {
        let dir = tempfile::tempdir().unwrap();
        write_token(dir.path(), "shared", "0123456789abcdef", 0o644);
        write_token(dir.path(), "short", "abc", 0o600);
        write_token(dir.path(), "spaces", "0123456789 abcdef", 0o400);
        for (file, want) in [
            ("shared", "accessible by group or others (mode 644)"),
            ("short", "shorter than 16"),
            ("spaces", "visible ASCII"),
            ("missing", "cannot read"),
        ] {
            let p = problems(&format!("[admin]\ntoken_file = \"{file}\"\n"), dir.path());
            assert!(
                p.len() == 1 && p[0].starts_with("admin.token_file: ") && p[0].contains(want),
                "{file}: {p:?}"
            );
        }
        let kind = |file: &str| super::token(&dir.path().join(file)).err().map(|e| e.kind());
        assert_eq!(kind("shared"), Some("not_private"));
        assert_eq!(kind("short"), Some("too_short"));
        assert_eq!(kind("spaces"), Some("not_visible_ascii"));
        assert_eq!(kind("missing"), Some("unreadable"));
        assert_eq!(kind("."), Some("not_a_file"));
    }

    /// The placeholder of the example Kubernetes Secret (read from the manifest, so a changed
    /// placeholder is caught here) is refused at start, saying to replace it.
    #[test]
    fn the_example_secrets_placeholder_token_is_refused() {
        let manifest = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/sidecar.yaml"),
        )
        .unwrap();
        let placeholder = manifest
            .lines()
            .find_map(|l| l.trim().strip_prefix("admin-token:"))
            .map(|v| v.trim().trim_matches('"').to_owned())
            .expect("the example Secret has an admin-token");
        let dir = tempfile::tempdir().unwrap();
        write_token(dir.path(), "t", &format!("{placeholder}\n"), 0o600);
        let p = problems("[admin]\ntoken_file = \"t\"\n", dir.path());
        assert!(
            p.len() == 1 && p[0].contains("placeholder") && p[0].contains("replace it"),
            "{placeholder}: {p:?}"
        );
        assert_eq!(
            super::token(&dir.path().join("t")).err().map(|e| e.kind()),
            Some("placeholder")
        );
    }

    #[test]
    fn limits_have_defaults_and_are_validated() {
        let c = Config::parse("", Path::new("g.toml")).unwrap();
        assert_eq!(c.limits, super::Limits::default());
        assert_eq!(
            c.admin.refresh_min_interval,
            super::DEFAULT_REFRESH_MIN_INTERVAL
        );
        let c = Config::parse(
            "[limits]\nheader_timeout = \"300ms\"\nmax_connections = 2\n\
             upstream_header_timeout = \"5s\"\nupstream_body_timeout = \"250ms\"\n\
             upstream_idle_timeout = \"1m\"\nwrite_timeout = \"2s\"\n[admin]\nrefresh_min_interval = \"0s\"\n",
            Path::new("g.toml"),
        )
        .unwrap();
        assert_eq!(c.limits.header_timeout.as_millis(), 300);
        assert_eq!(c.limits.max_connections, 2);
        assert_eq!(c.limits.upstream_header_timeout, Duration::from_secs(5));
        assert_eq!(c.limits.upstream_body_timeout, Duration::from_millis(250));
        assert_eq!(c.limits.upstream_idle_timeout, Duration::from_secs(60));
        assert_eq!(c.limits.write_timeout, Duration::from_secs(2));
        assert!(c.admin.refresh_min_interval.is_zero());

        let dir = tempfile::tempdir().unwrap();
        let p = problems(
            "[limits]\nheader_timeout = \"0s\"\nbody_timeout = \"2h\"\nidle_timeout = \"soon\"\n\
             max_connections = 0\nmax_inflight = 2000000\nupstream_header_timeout = \"0s\"\n\
             upstream_body_timeout = \"2h\"\nupstream_idle_timeout = \"never\"\n\
             write_timeout = \"0s\"\n[admin]\nrefresh_min_interval = \"2d\"\nmax_connections = 0\n",
            dir.path(),
        );
        let keys: Vec<&str> = p.iter().filter_map(|l| l.split(':').next()).collect();
        assert_eq!(
            keys,
            [
                "limits.header_timeout",
                "limits.body_timeout",
                "limits.idle_timeout",
                "limits.upstream_header_timeout",
                "limits.upstream_body_timeout",
                "limits.upstream_idle_timeout",
                "limits.write_timeout",
                "limits.max_connections",
                "limits.max_inflight",
                "admin.refresh_min_interval",
                "admin.max_connections"
            ],
            "{p:?}"
        );
    }
}
