//! `a2a-egress lock NAME` and `a2a-egress check [NAME…]`: pin an integration's current profile
//! into its lockfile, and check current profiles against their lockfiles (network and file I/O).
//!
//! Both build each profile exactly as the gateway does, by running the control plane's refresh
//! for the named integrations in-process (same fetch rules, extended card for the integration's
//! credential, contract checks), without the last-known-good directory: a check is about the
//! agent as it answers now.
//!
//! `lock` runs the integration's safe probes first: their evidence becomes the lockfile's
//! `verified`, and a claim the agent contradicts stops the pin. stdout `wrote <path>`; exit 0, 1
//! when the card cannot be fetched, a probe fails or the profile cannot be pinned, 64 for a bad
//! config or an unknown integration. `check`: one line per integration, `NAME: <verdict>`,
//! then its findings indented; exit the worst class (0 compatible or unpinned, 3 review, 4
//! breaking), 1 when a card could not be fetched at all or the integration's credential cannot be
//! read (`NAME: error: CREDENTIAL_MISSING: …`), 64 for a bad config.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use super::current::{Current, current, load};
use crate::config::Config;
use crate::lock::{self, Class, Verdict, file as lockfile};
use crate::probe::Outcome;
use crate::state::{IntegrationState, LockVerdict, Status};

pub(super) mod diff;

/// Arguments of `a2a-egress lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// The integration to pin.
    name: String,
    /// Config file [default: config/gateway.toml].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
}

/// Arguments of `a2a-egress check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Integrations to check [default: all].
    names: Vec<String>,
    /// Config file [default: config/gateway.toml].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
}

/// Runs `lock`.
pub fn run_lock(a: LockArgs) -> anyhow::Result<ExitCode> {
    let names = vec![a.name.clone()];
    let config = match load(a.config, &names) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let Some(c) = current(&config, &names)?.into_iter().next() else {
        return Ok(ExitCode::FAILURE);
    };
    let profile = match (&c.state, &c.failure) {
        (_, Some(why)) => {
            eprintln!("{}: {why}", a.name);
            return Ok(ExitCode::FAILURE);
        }
        // Blocked only means the old lockfile no longer holds: re-pinning is what fixes that.
        (Some(s), None) => match &s.status {
            Status::Unusable { reason, .. } => {
                eprintln!("{}: cannot pin: {reason}", a.name);
                return Ok(ExitCode::FAILURE);
            }
            Status::Pending => None,
            Status::Usable { profile, .. } | Status::Blocked { profile, .. } => {
                Some(profile.clone())
            }
        },
        (None, None) => None,
    };
    let (Some(profile), Some(state)) = (profile, &c.state) else {
        eprintln!("{}: no profile was built", a.name);
        return Ok(ExitCode::FAILURE);
    };
    let Some(verified) = probe_evidence(&config, state, &a.name)? else {
        return Ok(ExitCode::FAILURE);
    };
    let pinned = match lock::pin(
        &crate::state::manifest_of(&c.integration),
        &profile,
        chrono::Utc::now(),
        verified,
    ) {
        Ok(p) => p,
        Err(errors) => {
            for e in errors {
                eprintln!("{}: cannot pin: {e}", a.name);
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    for s in &pinned.skipped {
        eprintln!(
            "{}: note: {s} is not offered by the card; not pinned",
            a.name
        );
    }
    let path = lockfile::path_for(&config.path, &a.name);
    if let Err(e) = lockfile::write(&path, &pinned.lock) {
        eprintln!("{e}");
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "wrote {} ({}, {}, {} skill(s), agent version {})",
        path.display(),
        pinned.lock.interface,
        if pinned.lock.requires.streaming {
            "streaming pinned"
        } else {
            "streaming not pinned"
        },
        pinned.lock.requires.skills.len(),
        pinned.lock.agent_version
    );
    Ok(ExitCode::SUCCESS)
}

/// A lockfile's `verified`: claim → `probe ok <time>`.
type Verified = BTreeMap<String, String>;

/// The probes' evidence for the lockfile's `verified`; `None` after printing why when a claim
/// failed (nothing is pinned against a card that misstates itself).
fn probe_evidence(
    config: &Config,
    state: &IntegrationState,
    name: &str,
) -> anyhow::Result<Option<Verified>> {
    let results = super::probe::run_probes(config, state)?.unwrap_or_default();
    let mut verified = BTreeMap::new();
    let mut failed = false;
    for r in &results {
        match &r.outcome {
            Outcome::Ok(_) => {
                let at: chrono::DateTime<chrono::Utc> = r.at.into();
                verified.insert(
                    r.check.claim(),
                    format!(
                        "probe ok {}",
                        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ),
                );
            }
            Outcome::Failed(_) => {
                failed = true;
                eprintln!("{name}: probe failed: {r}");
            }
            Outcome::Inconclusive(_) => eprintln!("{name}: note: probe {r}"),
        }
    }
    Ok((!failed).then_some(verified))
}

/// What `check` found for one integration.
enum Checked {
    Unpinned,
    Verdict(Verdict),
    /// The card could not be fetched at all (no profile to judge).
    Failed(String),
}

/// The verdict the control plane reached while building the state: the gateway's own judgement,
/// so `check` and a running gateway cannot disagree.
fn check_one(c: &Current) -> Checked {
    if let Some(why) = &c.failure {
        return Checked::Failed(why.clone());
    }
    let Some(state) = &c.state else {
        return Checked::Failed("no state was built".into());
    };
    // A credential that cannot be read says nothing about the agent: an error (exit 1) with
    // its reason, not a verdict against the lockfile.
    if let (Some(_), Some(reason)) = (state.status.code(), state.status.reason()) {
        return Checked::Failed(reason.to_owned());
    }
    let class = match state.lock.verdict {
        LockVerdict::Unpinned => return Checked::Unpinned,
        // Only without a credential, which returned above.
        LockVerdict::NotJudged => return Checked::Failed("the lockfile was not judged".into()),
        LockVerdict::Compatible => Class::Compatible,
        LockVerdict::Review => Class::Review,
        LockVerdict::Breaking => Class::Breaking,
    };
    Checked::Verdict(Verdict {
        class,
        findings: state.lock.findings.clone(),
    })
}

/// Runs `check`.
pub fn run_check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let config = match load(a.config, &a.names) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let names: Vec<String> = if a.names.is_empty() {
        config.integrations.iter().map(|i| i.name.clone()).collect()
    } else {
        a.names.clone()
    };
    let mut worst = Class::Compatible;
    let mut failed = false;
    for c in current(&config, &names)? {
        let name = &c.integration.name;
        match check_one(&c) {
            Checked::Unpinned => println!("{name}: unpinned (no lockfile)"),
            Checked::Failed(why) => {
                failed = true;
                println!("{name}: error: {why}");
            }
            Checked::Verdict(v) => {
                worst = worst.max(v.class);
                println!("{name}: {}", v.class);
                for f in &v.findings {
                    println!("  {f}");
                }
            }
        }
    }
    Ok(ExitCode::from(if failed { 1 } else { worst.exit_code() }))
}
