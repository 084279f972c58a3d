//! The `a2a-egress` binary on the system allocator (glibc malloc) instead of the default
//! mimalloc: the same library and command line, only the process's allocator differs, so
//! `scripts/bench.sh` measures both allocators side by side from one build (no I/O of its own).
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    a2a_egress::cli::main()
}
