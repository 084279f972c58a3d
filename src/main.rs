//! The `a2a-egress` binary: everything lives in the library; this only picks the process's
//! allocator and hands over to `cli`.
#![forbid(unsafe_code)]

/// mimalloc instead of glibc malloc (cargo feature `mimalloc`, on by default): measured side by
/// side with the system allocator in one sitting (benches/RESULTS.md), it costs fewer
/// instructions and less CPU per request; the README's performance section gives the figures and
/// the memory trade-off.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    a2a_egress::cli::main()
}
