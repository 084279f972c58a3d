//! `a2a-egress config check [--config F]` and `a2a-egress config schema`: a configuration checked
//! offline, as in CI, and the JSON Schema editors and the README use (file I/O and the
//! environment; no network).
//!
//! `check` applies every rule `serve` applies at start, and reads what it can of the rest the
//! gateway reads later, on a machine that has none of the deployment's secrets. What it could not
//! read is a note on stderr (`note: …`), never a failure: a credential variable unset on the CI
//! machine, a credential file, the admin token file, the signing key or a CA file not mounted, a
//! lockfile not written yet. A file that is there is checked as the gateway reads it: a secret as
//! at start (an admin token file group-readable, too short or still the example's placeholder is
//! a problem), a CA file parsed as PEM by the gateway's loader, a lockfile read and parsed (a
//! folder, a file over its cap or an invalid one is a problem). Exit 0 valid
//! (stdout `valid <path>`), 64 invalid (stderr: every problem), 66 when the config file itself
//! cannot be read.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{DEFAULT_CONFIG, EXIT_USAGE};
use crate::config::{Config, Credential, SecretSource};
use crate::lock::file as lockfile;

/// Arguments of `a2a-egress config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCommand {
    /// Validates a config offline: every rule `serve` applies, without the deployment's secrets.
    ///
    /// Exit 0 valid (stdout `valid <path>`; what could not be read, such as credential variables,
    /// credential and token files, signing keys and lockfiles, as `note:` lines on stderr), 64
    /// invalid (stderr: every problem), 66 when the config file cannot be read.
    Check {
        /// Config file [default: config/gateway.toml].
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
    },
    /// Prints the JSON Schema of the config file (the one committed as
    /// schemas/config.schema.json), generated from the types the parser reads.
    Schema,
}

/// Runs `config check` or `config schema`.
pub fn run(a: ConfigArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        ConfigCommand::Check { config } => {
            let path = config.unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
            Ok(check(&path))
        }
        ConfigCommand::Schema => {
            println!("{}", schema_text());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The schema as committed: pretty-printed JSON (no trailing newline; `println!` adds it).
pub fn schema_text() -> String {
    serde_json::to_string_pretty(&crate::config::schema()).unwrap_or_default()
}

/// `config check` of the file at `path`.
fn check(path: &Path) -> ExitCode {
    let (config, mut notes) = match Config::load_offline(path) {
        Ok(c) => c,
        Err(e) => return super::config_refused(&e),
    };
    let mut problems = Vec::new();
    runtime_files(&config, &mut notes, &mut problems);
    for n in &notes {
        eprintln!("note: {n}");
    }
    if !problems.is_empty() {
        eprintln!("{}: invalid configuration:", path.display());
        for p in &problems {
            eprintln!("  - {p}");
        }
        return ExitCode::from(EXIT_USAGE);
    }
    println!("valid {}", path.display());
    ExitCode::SUCCESS
}

/// What the gateway reads after start, per integration: its credential, its CA file and its
/// lockfile. Not there: a note; there and wrong: a problem.
fn runtime_files(config: &Config, notes: &mut Vec<String>, problems: &mut Vec<String>) {
    for (n, i) in config.integrations.iter().enumerate() {
        let at = format!("integrations[{n}] ({:?})", i.name);
        if let Credential::Bearer(source) = &i.credential {
            match crate::config::bearer_authorization(&i.credential) {
                Ok(_) => {}
                Err(e) if e.is_missing() => notes.push(format!(
                    "{at}.credential: not read here ({e}); without it the integration is unusable (CREDENTIAL_MISSING){}",
                    match source {
                        SecretSource::Env(_) => "",
                        SecretSource::File(_) => ", re-read at every refresh",
                    }
                )),
                Err(e) => problems.push(format!("{at}.credential: {e}")),
            }
        }
        if let Some(ca) = &i.ca_file {
            match std::fs::metadata(ca) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => notes.push(format!(
                    "{at}.ca_file: not read here ({}: {e}); without it the integration is unusable",
                    ca.display()
                )),
                // There: read and parsed as the gateway does, so a file it would refuse is one.
                _ => {
                    if let Err(e) = crate::state::trust::trust_roots(Some(ca)) {
                        problems.push(format!("{at}.ca_file: {e}"));
                    }
                }
            }
        }
        // A lockfile that is not there is a note; one that is there and cannot be read (a
        // folder, over its cap, unreadable) or is invalid is a problem: the gateway judges it
        // breaking.
        let lock = lockfile::path_for(&config.path, &i.name);
        match lockfile::read(&lock) {
            Ok(Some(_)) => {}
            Ok(None) => notes.push(format!(
                "{at}: no lockfile {} (the integration runs unpinned)",
                lock.display()
            )),
            Err(e) => problems.push(format!("{at}: {e}")),
        }
    }
}
