//! `a2a-egress diff OLD NEW [--lock F]`: compiles two cards (or reads two compiled profiles) and
//! prints the profile-level diff and its class (file I/O; the classification is `lock::diff`).
//!
//! stdout: one finding per line, then `verdict: <class>`. Exit 0 compatible, 3 review, 4
//! breaking; 65 when a card, profile or lockfile is invalid; 64 for a bad config; 66 when a file
//! named on the command line is missing or unreadable.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::card::CardPolicy;
use crate::cli::{EXIT_INVALID, load_config};
use crate::lock::{self, UnreadableLock, Verdict};
use crate::profile::{ClientCaps, Profile};

/// Arguments of `a2a-egress diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The old card or compiled profile (JSON file).
    old: PathBuf,
    /// The new card or compiled profile (JSON file).
    new: PathBuf,
    /// A lockfile: classify against what it says the workflow needs instead of everything OLD offered.
    #[arg(long)]
    lock: Option<PathBuf>,
    /// Config file with the `[client]` table [default: config/gateway.toml if it exists, else built-in defaults].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
}

/// Why an input could not be used (exit 65).
#[derive(Debug, thiserror::Error)]
enum InputError {
    #[error("{path}: invalid card:\n{errors}")]
    Card {
        path: String,
        errors: crate::card::CardErrors,
    },
    #[error("{path}: not a compiled profile: {message}")]
    Profile { path: String, message: String },
    #[error("{0}")]
    Lock(lock::LockError),
}

/// Runs the command.
pub fn run(a: &DiffArgs) -> anyhow::Result<ExitCode> {
    let (caps, policy) = match load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return Ok(crate::cli::config_refused(&e)),
    };
    let inputs = (|| {
        let old = profile_of(&a.old, &caps, &policy)?;
        let new = profile_of(&a.new, &caps, &policy)?;
        let lock = match &a.lock {
            None => None,
            Some(p) => match lock::file::read(p) {
                Ok(Some(l)) => Some(l),
                // A missing input file, as every command reports one (exit 66).
                Ok(None) => {
                    return Err(anyhow::Error::from(crate::types::file::FileError::Io {
                        what: "lockfile",
                        path: p.clone(),
                        source: std::io::ErrorKind::NotFound.into(),
                    }));
                }
                Err(UnreadableLock::Invalid(e)) => return Err(InputError::Lock(e).into()),
                Err(e) => return Err(e.into()),
            },
        };
        Ok((old, new, lock))
    })();
    let (old, new, lock) = match inputs {
        Ok(v) => v,
        Err(e) => match e.downcast::<InputError>() {
            Ok(invalid) => {
                eprintln!("{invalid}");
                return Ok(ExitCode::from(EXIT_INVALID));
            }
            Err(other) => return Err(other),
        },
    };
    let verdict = lock::diff_profiles(&old, &new, lock.as_ref());
    print_verdict(&verdict);
    Ok(ExitCode::from(verdict.class.exit_code()))
}

/// stdout: each finding, then the class.
pub(super) fn print_verdict(v: &Verdict) {
    for f in &v.findings {
        println!("{f}");
    }
    println!("verdict: {}", v.class);
}

/// A card (validated and compiled with `caps`) or a profile as `compile` prints it.
fn profile_of(path: &Path, caps: &ClientCaps, policy: &CardPolicy) -> anyhow::Result<Profile> {
    let name = path.display().to_string();
    let bytes = crate::cli::read_card_file(path, policy.max_card_bytes)?;
    let looks_like_profile = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.contains_key("usable") && o.contains_key("card_digest"))
        })
        .unwrap_or(false);
    if looks_like_profile {
        return serde_json::from_slice::<Profile>(&bytes).map_err(|e| {
            InputError::Profile {
                path: name,
                message: e.to_string(),
            }
            .into()
        });
    }
    let validated = crate::cli::guard::contain(|| crate::card::validate(&bytes, policy, None))
        .map_err(|p| anyhow::anyhow!("internal error while checking {name}: {}", p.description))?
        .map_err(|errors| InputError::Card {
            path: name.clone(),
            errors,
        })?;
    Ok(crate::profile::compile(&validated, caps))
}
