//! The `a2a-egress` command line (clap); the only place besides `main` that uses `anyhow`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod agent;

/// Exit code for an invalid input document (sysexits EX_DATAERR).
pub const EXIT_INVALID: u8 = 65;

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
    /// Run the bundled reference A2A agent (seed 004) from a capability registry.
    Agent(agent::AgentArgs),
}

/// Parses the command line, runs the command and maps its outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Agent(args) => agent::run(args),
    }
}
