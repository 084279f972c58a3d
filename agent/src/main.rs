//! The `a2a-agent` binary: runs the bundled reference agent, or prints one of its card
//! projections (clap; everything else lives in the library).
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use a2a_agent::{self as agent, server};
use clap::Parser as _;

/// Exit code for an invalid registry (sysexits EX_DATAERR, as the gateway's invalid inputs).
const EXIT_INVALID: u8 = 65;
/// Exit code for a bad `--print-card` selector (sysexits EX_USAGE; clap's own errors exit 2).
const EXIT_USAGE: u8 = 64;

/// Arguments of `a2a-agent`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "a2a-agent",
    version,
    about = "Reference A2A 1.0 agent generated from one capability registry"
)]
struct AgentArgs {
    /// The capability registry (TOML), e.g. config/agent/registry.toml.
    #[arg(long)]
    registry: PathBuf,
    /// Address to listen on; port 0 picks a free port (printed as the first stdout line).
    #[arg(long, default_value = "127.0.0.1:7400")]
    listen: SocketAddr,
    /// Print a card projection instead of serving: `public` or `extended:<principal>`.
    #[arg(long, value_name = "public|extended:<principal>")]
    print_card: Option<String>,
    /// How often the registry file is checked for changes, in milliseconds; 0 = only on SIGHUP.
    #[arg(long, default_value_t = 500)]
    watch_interval_ms: u64,
    /// Shut down when stdin is closed (for test harnesses).
    #[arg(long)]
    exit_on_stdin_eof: bool,
}

/// Runs the agent; exit 0 on clean shutdown, 65 on an invalid registry, 64 for a bad
/// `--print-card` selector, 1 on other failures.
fn main() -> ExitCode {
    let args = AgentArgs::parse();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    if let Some(which) = &args.print_card {
        return match agent::print_card(&args.registry, args.listen, which) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                match e {
                    agent::PrintCardError::Registry(_) => ExitCode::from(EXIT_INVALID),
                    _ => ExitCode::from(EXIT_USAGE),
                }
            }
        };
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let opts = server::ServeOptions {
        registry: args.registry,
        listen: args.listen,
        poll_interval: (args.watch_interval_ms > 0)
            .then(|| Duration::from_millis(args.watch_interval_ms)),
        exit_on_stdin_eof: args.exit_on_stdin_eof,
    };
    match rt.block_on(server::serve(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                server::ServerError::Registry(_) => ExitCode::from(EXIT_INVALID),
                _ => ExitCode::FAILURE,
            }
        }
    }
}
