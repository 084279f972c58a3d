//! `a2a-egress probe NAME`: runs the integration's safe probes against its agent and prints the
//! evidence, one claim per line (network I/O through the control plane's SSRF-checked client).
//!
//! stdout: `<claim>: ok|failed|inconclusive (<detail>)` per probe. Exit 0 when no claim failed,
//! 1 when one did (or no profile could be built), 64 for a bad config or unknown integration.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::current::{current, load};
use crate::config::Config;
use crate::control::fetch::CardFetcher;
use crate::probe::{self, Outcome, ProbeResult};
use crate::server::probes::Direct;
use crate::state::IntegrationState;

/// Arguments of `a2a-egress probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The integration to probe.
    name: String,
    /// Config file [default: config/gateway.toml].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
}

/// Runs the probes `state` allows; `None` when it has no interface to probe.
pub(super) fn run_probes(
    config: &Config,
    state: &IntegrationState,
) -> anyhow::Result<Option<Vec<ProbeResult>>> {
    let Some((target, checks)) = probe::plan(state) else {
        return Ok(None);
    };
    let transport = Direct::new(CardFetcher::new(), config, state)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    Ok(Some(rt.block_on(probe::run(&target, &checks, &transport))))
}

/// Runs `probe`.
pub fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    let names = vec![a.name.clone()];
    let config = match load(a.config, &names) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let Some(c) = current(&config, &names)?.into_iter().next() else {
        return Ok(ExitCode::FAILURE);
    };
    let Some(state) = c.state.filter(|_| c.failure.is_none()) else {
        eprintln!(
            "{}: {}",
            a.name,
            c.failure.unwrap_or_else(|| "no state".into())
        );
        return Ok(ExitCode::FAILURE);
    };
    let Some(results) = run_probes(&config, &state)? else {
        // Why there is none: the status's own reason (`CREDENTIAL_MISSING: …`, an origin, a pin).
        let why = match state.status.reason() {
            Some(r) => format!("{}: {r}", state.status.as_str()),
            None => state.status.as_str().to_owned(),
        };
        eprintln!("{}: no usable interface to probe ({why})", a.name);
        return Ok(ExitCode::FAILURE);
    };
    let mut failed = false;
    for r in &results {
        failed |= matches!(r.outcome, Outcome::Failed(_));
        println!("{r}");
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
