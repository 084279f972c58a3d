//! The `a2a-egress` binary: everything lives in the library; this only hands over to `cli`.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    a2a_egress::cli::main()
}
