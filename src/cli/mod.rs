//! The `a2a-egress` command line (clap); the only place besides `main` that uses `anyhow`.
//!
//! Output conventions: results (the profile JSON, `valid sha256:…`) go to stdout; problems go to
//! stderr, one per line, each starting with the JSON path (or config key) it is about. Exit codes:
//! 0 success, [`EXIT_INVALID`] (65) for an invalid card, [`EXIT_USAGE`] (64) for a bad config or
//! command line, [`EXIT_NOINPUT`] (66) for a file named on the command line (the config file
//! included) that is missing or cannot be read, in every command, [`EXIT_SOFTWARE`] (70) when
//! checking a card hit a bug (a caught panic), 1 for other I/O failures. A file the config names
//! (token, key, JWKS, schema) that cannot be read makes the config invalid (64). `validate` and
//! `compile` never exit with Rust's panic code 101.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::card;

mod serve;
use crate::card::CardPolicy;
use crate::config::Config;
use crate::profile::ClientCaps;

mod config_cmd;
mod current;
mod guard;
mod guard_test;
mod keygen;
mod lock;
mod planner;
mod probe;

/// Exit code for an invalid input document (sysexits EX_DATAERR).
pub const EXIT_INVALID: u8 = 65;
/// Exit code for a bad command line or configuration (sysexits EX_USAGE).
pub const EXIT_USAGE: u8 = 64;
/// Exit code for an internal error: checking a card panicked (sysexits EX_SOFTWARE).
pub const EXIT_SOFTWARE: u8 = 70;
/// Exit code for an input file that does not exist or cannot be read: the config file, a card,
/// a lockfile, a need, a token file named on the command line (sysexits EX_NOINPUT).
pub const EXIT_NOINPUT: u8 = 66;

/// The exit code for a config that cannot be used: [`EXIT_NOINPUT`] when the file itself cannot
/// be read, else [`EXIT_USAGE`].
fn config_exit_code(e: &crate::config::ConfigError) -> u8 {
    match e {
        crate::config::ConfigError::Read(f) if f.is_missing() => EXIT_NOINPUT,
        _ => EXIT_USAGE,
    }
}

/// Prints a config that cannot be used and returns its exit code ([`config_exit_code`]).
fn config_refused(e: &crate::config::ConfigError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(config_exit_code(e))
}

/// The exit code of a command that failed with `e`: [`EXIT_NOINPUT`] when an input file is
/// missing or unreadable, else 1.
fn failure_code(e: &anyhow::Error) -> ExitCode {
    let noinput = e.chain().any(|c| {
        c.downcast_ref::<crate::types::file::FileError>()
            .is_some_and(crate::types::file::FileError::is_missing)
    });
    if noinput {
        ExitCode::from(EXIT_NOINPUT)
    } else {
        ExitCode::FAILURE
    }
}

/// The config file used when `--config` is not given and this file exists.
pub const DEFAULT_CONFIG: &str = "config/gateway.toml";

#[derive(Debug, Parser)]
#[command(
    name = "a2a-egress",
    version,
    about = "Egress sidecar for the A2A protocol 1.0"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validates an Agent Card (size, JSON, A2A 1.0 structure, URLs, signatures); prints each problem.
    ///
    /// Exit 0 if valid (stdout: `valid <card_digest>` and a `signature: …` line; warnings on
    /// stderr), 65 if invalid (stderr: one problem per line, each starting with the JSON path),
    /// 70 if checking the card hit an internal error (one line on stderr).
    Validate(CardArgs),
    /// Validates and compiles an Agent Card; prints the compiled profile as JSON on stdout.
    ///
    /// Exit 0 (even for a profile with `usable: false`: the card itself is valid), 65 if the card
    /// is invalid, 70 if checking it hit an internal error.
    Compile(CardArgs),
    /// Runs the gateway: data plane (pingora), control plane and admin listener, until SIGTERM/SIGINT.
    ///
    /// Prints one JSON line on stdout once listening: `{"proxy": ADDR, "admin": ADDR, "public_url": URL}`.
    /// Exit 0 on clean shutdown, 64 for a bad config.
    Serve(ServeArgs),
    /// Compiles two cards (or reads two compiled profiles) and prints the profile-level diff.
    ///
    /// stdout: one finding per line (`<class>: <field>: <old> -> <new> (<why>)`), then
    /// `verdict: <class>`. With --lock the change is judged against what the lockfile says the
    /// workflow needs; without, against everything OLD offered. Exit 0 compatible, 3 review,
    /// 4 breaking, 65 invalid card/profile/lockfile, 64 bad config.
    Diff(lock::diff::DiffArgs),
    /// Fetches and compiles an integration's card as the gateway would and writes its lockfile
    /// (`locks/<name>.json` beside the config) atomically.
    ///
    /// Exit 0, 1 when the card cannot be fetched or the profile cannot be pinned (each reason on
    /// stderr), 64 for a bad config or unknown integration.
    Lock(lock::LockArgs),
    /// Checks each integration's current card against its lockfile: one `NAME: <verdict>` line
    /// each (`unpinned` without a lockfile), findings indented below.
    ///
    /// Exit the worst class (0 compatible/unpinned, 3 review, 4 breaking), 1 when a card could
    /// not be fetched, 64 for a bad config or unknown integration.
    Check(lock::CheckArgs),
    /// Runs the integration's safe probes (side-effect-free calls, and trivial messages only to
    /// its `[integrations.probe] skill`) and prints the evidence, one claim per line.
    ///
    /// Exit 0 when no claim failed, 1 when one did or no profile could be built, 64 for a bad
    /// config or unknown integration.
    Probe(probe::ProbeArgs),
    /// Writes a new private signing key (a JWK, mode 0600) for the gateway's effective cards and
    /// prints its public JWK, for the orchestrators that verify the cards.
    ///
    /// Exit 0, 1 when the file exists (without --force) or cannot be written.
    Keygen(keygen::KeygenArgs),
    /// Asks a running gateway which integration can take a need (`POST /v1/select` on its admin
    /// listener) and prints the answer JSON: the chosen integration and every candidate's reasons.
    ///
    /// Exit 0 when one was chosen, 3 when none fits (the answer's `gap` says why), 65 when the
    /// gateway refuses the need, 64 for a bad command line or config, 1 when the admin listener
    /// cannot be reached.
    Select(planner::SelectArgs),
    /// Prints a table of a running gateway's integrations (usable, lockfile verdict, streaming,
    /// profile age, last error), read from its admin listener.
    ///
    /// Exit 0 when the gateway answered, 1 when it could not be reached, 64 for a bad config.
    Status(planner::StatusArgs),
    /// The configuration file: `config check` validates one offline, `config schema` prints
    /// its JSON Schema.
    Config(config_cmd::ConfigArgs),
    /// The content guard: `guard test FILE --integration NAME` prints what an integration's
    /// guard would do to a request body.
    ///
    /// Exit 0 allow, 3 redact, 4 refuse, 64 bad config or integration, 65 a body the gateway
    /// refuses before scanning it, 66 a file that cannot be read.
    Guard(guard_test::GuardArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Config file [default: config/gateway.toml].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Log line format on stderr [default: `[log] format`, else text]. The level is `RUST_LOG`
    /// when set, else `[log] level`.
    #[arg(long, value_enum)]
    log_format: Option<crate::config::LogFormat>,
}

#[derive(Debug, Args)]
struct CardArgs {
    /// The card: a file path, or `-` for stdin.
    card: String,
    /// Config file with the `[client]` table [default: config/gateway.toml if it exists, else built-in defaults].
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Origin (`https://host[:port]`) the card came from; selects which trusted keys may verify its signatures.
    #[arg(long)]
    origin: Option<String>,
}

/// The command line's definition (for checks that a deployment's arguments parse).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Parses the command line, runs the command and maps its outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Validate(a) => card_command(&a, false),
        Command::Compile(a) => card_command(&a, true),
        Command::Serve(a) => match serve::load(a.config) {
            Ok(c) => serve::run(c, a.log_format).map(|()| ExitCode::SUCCESS),
            Err(e) => {
                eprintln!("{e}");
                Ok(ExitCode::from(e.exit_code()))
            }
        },
        Command::Diff(a) => lock::diff::run(&a),
        Command::Lock(a) => lock::run_lock(a),
        Command::Check(a) => lock::run_check(a),
        Command::Probe(a) => probe::run(a),
        Command::Keygen(a) => keygen::run(&a),
        Command::Select(a) => planner::run_select(a),
        Command::Status(a) => planner::run_status(a),
        Command::Config(a) => config_cmd::run(a),
        Command::Guard(a) => guard_test::run(a),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            failure_code(&e)
        }
    }
}

/// Loads `--config`, or the default file if present, or built-in defaults. A default file that
/// is picked up is named on stderr: it may loosen the policy (the demo config allows plain
/// http), so the verdict's source must be visible.
fn load_config(
    explicit: Option<&Path>,
) -> Result<(ClientCaps, CardPolicy), crate::config::ConfigError> {
    let path = match explicit {
        Some(p) => Some(p.to_owned()),
        None => {
            let p = Some(PathBuf::from(DEFAULT_CONFIG)).filter(|p| p.exists());
            if let Some(p) = &p {
                eprintln!("using config {}", p.display());
            }
            p
        }
    };
    match path {
        Some(p) => Config::load(&p).map(|c| (c.caps, c.card_policy)),
        None => Ok((ClientCaps::default(), CardPolicy::default())),
    }
}

/// A card file given on the command line, through the one bounded reader (at most the config's
/// `max_card_bytes`; a FIFO or device is refused, so `-` is the way to pipe a card in).
fn read_card_file(path: &Path, max_card_bytes: usize) -> anyhow::Result<Vec<u8>> {
    let cap = u64::try_from(max_card_bytes).unwrap_or(u64::MAX);
    Ok(crate::types::file::read_capped(path, cap, "card file")?)
}

fn card_command(a: &CardArgs, compile: bool) -> anyhow::Result<ExitCode> {
    let (caps, policy) = match load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return Ok(config_refused(&e)),
    };
    let origin = match a.origin.as_deref() {
        None => None,
        Some(o) => match crate::types::normalize_origin(o) {
            Some(o) => Some(o),
            None => {
                eprintln!("--origin: {o:?} is not a scheme://host[:port] origin");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        },
    };
    // Read at most limit + 1 bytes: an oversized card is refused without buffering it whole.
    let bytes = if a.card == "-" {
        card::wire::read_bounded(std::io::stdin().lock(), policy.max_card_bytes)
            .context("reading the card from stdin")?
    } else {
        read_card_file(std::path::Path::new(&a.card), policy.max_card_bytes)?
    };
    // The validator must not panic on any input; should a bug make it, the command still ends
    // with a meaningful exit code and one line saying so, not a backtrace and 101.
    let checked = guard::contain(|| check(&bytes, &policy, origin.as_deref(), &caps, compile));
    match checked {
        Err(p) => {
            eprintln!(
                "error: internal error while checking the card (a bug in a2a-egress; please report it with the card): {}",
                p.description
            );
            Ok(ExitCode::from(EXIT_SOFTWARE))
        }
        Ok(Err(errors)) => {
            let mut err = std::io::stderr().lock();
            for e in errors.iter() {
                writeln!(err, "{e}")?;
            }
            Ok(ExitCode::from(EXIT_INVALID))
        }
        Ok(Ok((validated, profile))) => {
            print_outcome(&validated, profile.as_ref())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Validates, and compiles when asked: the pure part of the card commands.
fn check(
    bytes: &[u8],
    policy: &CardPolicy,
    origin: Option<&str>,
    caps: &ClientCaps,
    compile: bool,
) -> Result<(card::ValidatedCard, Option<crate::profile::Profile>), card::CardErrors> {
    let validated = card::validate(bytes, policy, origin)?;
    let profile = compile.then(|| crate::profile::compile(&validated, caps));
    Ok((validated, profile))
}

/// Warnings on stderr; the profile JSON (compile) or the digest and signature verdict (validate)
/// on stdout.
fn print_outcome(
    validated: &card::ValidatedCard,
    profile: Option<&crate::profile::Profile>,
) -> anyhow::Result<()> {
    {
        let mut err = std::io::stderr().lock();
        for w in validated.warnings() {
            writeln!(err, "warning: {w}")?;
        }
    }
    let mut out = std::io::stdout().lock();
    if let Some(profile) = profile {
        serde_json::to_writer_pretty(&mut out, profile)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "valid {}", validated.digest())?;
    match validated.signature() {
        card::SignatureStatus::Unsigned => writeln!(out, "signature: none")?,
        card::SignatureStatus::Verified(v) => writeln!(
            out,
            "signature: verified (signatures[{}], kid {:?}, {})",
            v.index, v.kid, v.alg
        )?,
        card::SignatureStatus::Unverified { .. } => {
            writeln!(out, "signature: present, not verified")?
        }
    }
    Ok(())
}
