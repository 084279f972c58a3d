//! `a2a-egress select` and `a2a-egress status`: the planner API of a running gateway, for scripts
//! and for a person at a shell (network I/O: HTTP to the admin listener).
//!
//! Both read the gateway's live state (verdicts, evidence, freshness) rather than fetching cards
//! themselves, so what they print is what the gateway decides. The admin listener is `--admin
//! URL`, else `[listen] admin` of `--config` (or of `config/gateway.toml` when it exists), else
//! `http://127.0.0.1:7412`; the token is read from `--token-file`, else, only when the address
//! came from the config, from that config's `[admin] token_file` (never sent elsewhere).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::{DEFAULT_CONFIG, EXIT_INVALID, EXIT_USAGE};
use crate::admin::view::IntegrationView;
use crate::card::sanitize::sanitize;
use crate::select::MAX_NEED_BYTES;

/// Exit code of `select` when no integration fits the need (the answer, with its gap, is
/// still printed).
pub const EXIT_GAP: u8 = 3;

/// Where the admin listener is.
#[derive(Debug, clap::Args)]
pub struct AdminArgs {
    /// The admin listener's base URL (`http://127.0.0.1:7412`) [default: `[listen] admin` of the config].
    #[arg(long)]
    admin: Option<String>,
    /// Config file to read `[listen] admin` and `[admin] token_file` from, when `--admin` is not
    /// given [default: config/gateway.toml if it exists].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// File holding the admin bearer token (needed when the gateway has `[admin] token_file`: the
    /// planner routes then need it) [default: `[admin] token_file` of the config when the address
    /// comes from it; none with `--admin`].
    #[arg(long)]
    token_file: Option<PathBuf>,
}

/// Arguments of `a2a-egress select`.
#[derive(Debug, clap::Args)]
pub struct SelectArgs {
    /// The need (JSON): a file path, or `-` for stdin.
    #[arg(long)]
    need: String,
    #[command(flatten)]
    admin: AdminArgs,
}

/// Arguments of `a2a-egress status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    admin: AdminArgs,
}

/// Where and how to reach the admin listener.
struct Target {
    /// The admin base URL, without a trailing slash.
    base: String,
    /// The bearer token file: `--token-file`, else (no `--admin`) `[admin] token_file` of the config.
    token_file: Option<PathBuf>,
}

/// The admin listener to ask, and the token for it. With `--admin`, the token is `--token-file`
/// or none, and no config is read: a config's `[admin] token_file` is the token of that
/// config's own admin listener, and is never sent to another address. Without, both come from
/// the config (`--config`, else `config/gateway.toml` when it exists): its `[listen] admin` and
/// its `[admin] token_file`, unless `--token-file` is given. `Err` is the exit code, after
/// printing why.
fn target(a: &AdminArgs) -> Result<Target, ExitCode> {
    if let Some(u) = &a.admin {
        let usage = |why: String| {
            eprintln!("--admin {u:?}: {why}");
            ExitCode::from(EXIT_USAGE)
        };
        let parsed = url::Url::parse(u).map_err(|e| usage(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(usage("not an http(s) URL".into()));
        }
        if a.config.is_some() && a.token_file.is_none() {
            eprintln!(
                "note: --config is not read with --admin (its [admin] token_file belongs to its own admin listener); no token is sent without --token-file"
            );
        }
        let base = u.trim_end_matches('/').to_owned();
        return Ok(Target {
            base,
            token_file: a.token_file.clone(),
        });
    }
    let path = a
        .config
        .clone()
        .or_else(|| Some(PathBuf::from(DEFAULT_CONFIG)).filter(|p| p.exists()));
    let config = path
        .map(|p| crate::config::Config::load(&p).map_err(|e| super::config_refused(&e)))
        .transpose()?;
    let token_file =
        (a.token_file.clone()).or_else(|| config.as_ref().and_then(|c| c.admin.token_file.clone()));
    let base = match &config {
        Some(c) => format!("http://{}", c.listen.admin),
        None => "http://127.0.0.1:7412".into(),
    };
    Ok(Target { base, token_file })
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    crate::control::fetch::install_crypto_provider();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
}

fn client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("building the HTTP client")
}

fn read_need(source: &str) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let limit = (MAX_NEED_BYTES + 1) as u64;
    if source == "-" {
        std::io::stdin()
            .lock()
            .take(limit)
            .read_to_end(&mut bytes)?;
    } else {
        bytes = crate::types::file::read_capped(Path::new(source), MAX_NEED_BYTES as u64, "need")?;
    }
    Ok(bytes)
}

fn read_token(path: &Path) -> anyhow::Result<String> {
    let cap = crate::config::MAX_PRIVATE_FILE_BYTES;
    let t = crate::types::file::read_capped_string(path, cap, "admin token file")?;
    Ok(t.trim_end().to_owned())
}

/// `a2a-egress select`: stdout the answer JSON; exit 0 chosen, [`EXIT_GAP`] when none fits,
/// 65 when the gateway refuses the need, 64 for a bad command line or config, 1 when the admin
/// listener cannot be reached.
pub fn run_select(a: SelectArgs) -> anyhow::Result<ExitCode> {
    let Target { base, token_file } = match target(&a.admin) {
        Ok(t) => t,
        Err(code) => return Ok(code),
    };
    let need = read_need(&a.need)?;
    let token = token_file.as_deref().map(read_token).transpose()?;
    let (status, body) = runtime()?.block_on(async {
        let mut req = client()?
            .post(format!("{base}/v1/select"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(need);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("POST {base}/v1/select"))?;
        let status = resp.status();
        anyhow::Ok((status, resp.bytes().await?))
    })?;
    if !status.is_success() {
        eprintln!(
            "error: the gateway refused the need ({status}): {}",
            error_message(&body)
        );
        let code = match status.as_u16() {
            400 | 413 | 415 => EXIT_INVALID,
            _ => 1,
        };
        return Ok(ExitCode::from(code));
    }
    // Printed as the gateway wrote it: it is JSON the gateway produced, fields and all.
    let answer: serde_json::Value = serde_json::from_slice(&body).context("reading the answer")?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &answer)?;
    writeln!(out)?;
    Ok(match answer.get("chosen").and_then(|c| c.as_str()) {
        Some(_) => ExitCode::SUCCESS,
        None => ExitCode::from(EXIT_GAP),
    })
}

/// The `message` of a `google.rpc.Status` body, sanitised; else a placeholder.
fn error_message(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    match v.pointer("/error/message").and_then(|m| m.as_str()) {
        Some(m) => sanitize(m, 512),
        None => "(no google.rpc.Status body)".into(),
    }
}

/// `a2a-egress status`: a table of integrations on stdout; exit 0 when the gateway answered
/// (whatever the integrations' state), 1 when it could not be reached, 64 for a bad config.
pub fn run_status(a: StatusArgs) -> anyhow::Result<ExitCode> {
    let Target { base, token_file } = match target(&a.admin) {
        Ok(t) => t,
        Err(code) => return Ok(code),
    };
    let token = token_file.as_deref().map(read_token).transpose()?;
    let body = runtime()?.block_on(async {
        let mut req = client()?.get(format!("{base}/v1/integrations"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("GET {base}/v1/integrations"))?;
        let status = resp.status();
        let body = resp.bytes().await?;
        if !status.is_success() {
            anyhow::bail!(
                "GET {base}/v1/integrations: {status}: {}",
                error_message(&body)
            );
        }
        anyhow::Ok(body)
    })?;
    #[derive(serde::Deserialize)]
    struct Listing {
        integrations: Vec<IntegrationView>,
    }
    let listing: Listing = serde_json::from_slice(&body).context("reading the integrations")?;
    let mut out = std::io::stdout().lock();
    out.write_all(table(&listing.integrations).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Widest "last error" column, in chars (the rest is cut with `…`).
const MAX_ERROR_COLUMN: usize = 80;
/// Widest name column.
const MAX_NAME_COLUMN: usize = 32;

/// The table `status` prints (pure): one row per integration, columns padded; every string
/// that came over the wire sanitised again (the terminal must not take escapes from it).
pub fn table(views: &[IntegrationView]) -> String {
    let header = [
        "INTEGRATION",
        "STATUS",
        "USABLE",
        "VERDICT",
        "STREAMING",
        "AGE",
        "LAST ERROR",
    ]
    .map(str::to_owned);
    let mut rows = vec![header.to_vec()];
    for v in views {
        let streaming = if !v.streaming.declared {
            "no".into()
        } else if v.streaming.mode == "off" {
            "off".into()
        } else if let Some(o) = &v.streaming.observed {
            o.clone()
        } else {
            v.streaming.verified.clone()
        };
        let status = match v.degraded {
            true => format!("{} (degraded)", v.status),
            false => v.status.clone(),
        };
        rows.push(vec![
            sanitize(&v.integration, MAX_NAME_COLUMN),
            sanitize(&status, 32),
            if v.usable { "yes" } else { "no" }.into(),
            sanitize(&v.lock.verdict, 16),
            sanitize(&streaming, 16),
            v.profile
                .as_ref()
                .map_or("-".into(), |p| age(p.age_seconds)),
            // The status's own account (why unusable or blocked) first, then the degraded
            // refresh's; both quote the card, so they come sanitised again.
            (v.untrusted.reasons.first())
                .or(v.reasons.first())
                .map_or("-".into(), |r| sanitize(r, MAX_ERROR_COLUMN)),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        s.push_str(cells.join("  ").trim_end());
        s.push('\n');
    }
    s
}

/// `42s`, `5m`, `3h`, `2d`.
fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_short() {
        assert_eq!(
            [0, 59, 60, 3599, 3600, 86_399, 86_400 * 3].map(age),
            ["0s", "59s", "1m", "59m", "1h", "23h", "3d"]
        );
    }

    #[test]
    fn the_table_sanitises_what_came_over_the_wire() {
        let v: IntegrationView = serde_json::from_value(serde_json::json!({
            "integration": "fin\u{1b}[2Jance", "status": "usable", "usable": true,
            "degraded": true, "reasons": ["card fetch failed:\u{202e} evil\nline", "second"],
            "lock": {"verdict": "review", "findings": [], "at": "2026-12-01T00:00:00Z",
                "fallback": null},
            "interface": null, "skills": [],
            "streaming": {"declared": true, "mode": "preferred", "allowed": true,
                "verified": "declared", "verified_at": null, "observed": null,
                "observed_at": null},
            "evidence": [], "profile": {"card_digest": "sha256:00",
                "installed_at": "2026-12-01T00:00:00Z", "age_seconds": 125,
                "validated_at": null, "unrevalidated": false},
            "untrusted": {"name": "", "description": "", "agent_version": "", "skills": {},
                "other_skills": [], "reasons": ["card fetch failed:\u{202e} evil\nline"]}
        }))
        .unwrap();
        let t = table(&[v]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2, "{t}");
        assert!(lines[0].starts_with("INTEGRATION"));
        assert!(!t.contains('\u{1b}') && !t.contains('\u{202e}'), "{t:?}");
        for cell in [
            "fin[2Jance",
            "usable (degraded)",
            "yes",
            "review",
            "declared",
            "2m",
        ] {
            assert!(lines[1].contains(cell), "{cell}: {t}");
        }
        assert!(lines[1].ends_with("card fetch failed: evil line"), "{t}");
    }
}
