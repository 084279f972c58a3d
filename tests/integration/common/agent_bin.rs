//! Finds the reference agent's binary (`a2a-agent`) for the tests and benches that start it, and
//! in the gateway's suite builds it first (reads the environment and the file system; runs
//! `cargo build` once per process). Shared by `tests/integration/common/` (both products'
//! suites) and `benches/proxy_latency.rs`; depends on nothing else of the harness.
//!
//! Why not `env!`: the agent is another package of the workspace, and cargo sets
//! `CARGO_BIN_EXE_<name>` only for binaries of the package under test; artifact dependencies
//! (a dependency on a binary) are nightly-only. Running the agent in this process instead (as a
//! dev-dependency, which has a library) would lose what the tests rely on: a process to send
//! SIGHUP and SIGTERM to, to kill and restart on the same port, its own environment for the
//! principals' tokens and its own stderr; and the cycle a2a-egress → a2a-agent → a2a-egress would
//! give the gateway's unit tests a second copy of its library. So [`agent_bin`] is, in order:
//! 1. `$A2A_AGENT_BIN` when set (pins a run to one build, like `A2A_EGRESS_BIN`);
//! 2. in the agent's own suite, the binary cargo built for it (`CARGO_BIN_EXE_a2a-agent`);
//! 3. in the gateway's suite and benches, `a2a-agent` in the target directory this executable was
//!    built in (`<target>/<profile>/deps/<test>` → `<target>/<profile>/a2a-agent`), first brought
//!    up to date by cargo into that same directory when it runs under cargo (`$CARGO`; cargo
//!    holds no lock on the target directory while tests run; the command is in [`build_agent`]).
//!    So a fresh clone's `cargo test --test integration` builds it, a run after an edit to the
//!    agent or the gateway's library never starts a stale agent, and after
//!    `cargo test --workspace` or `scripts/test.sh` (which build it already) it is a no-op.
//!    Without `$CARGO` (the test executable run by hand) the binary must already be there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The reference agent's binary (see the module's doc for the order), found and brought up to
/// date once per test process. Panics with cargo's output when the build fails, and with what to
/// run when there is no binary to start.
pub fn agent_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("A2A_AGENT_BIN") {
            return PathBuf::from(bin);
        }
        if let Some(bin) = option_env!("CARGO_BIN_EXE_a2a-agent") {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("the test executable's path");
        let Some((target_dir, profile_dir)) = target_of(&exe) else {
            panic!(
                "cannot tell the target directory of {} (not <target>/<profile>/deps/<test>); \
                 set A2A_AGENT_BIN to an a2a-agent binary",
                exe.display()
            );
        };
        if let Some(cargo) = std::env::var_os("CARGO") {
            build_agent(&cargo, &target_dir, &profile_dir);
        }
        let bin = target_dir.join(&profile_dir).join("a2a-agent");
        assert!(
            bin.is_file(),
            "{} is missing: run `cargo build -p a2a-agent` (or `cargo test --workspace`), or set \
             A2A_AGENT_BIN",
            bin.display()
        );
        bin
    })
    .clone()
}

/// `(<target>, <profile dir>)` of a test executable at `<target>/<profile dir>/deps/<test>`.
fn target_of(exe: &Path) -> Option<(PathBuf, String)> {
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    let profile_dir = deps.parent()?;
    let name = profile_dir.file_name()?.to_str()?.to_owned();
    Some((profile_dir.parent()?.to_path_buf(), name))
}

/// Builds `a2a-agent` into `target_dir` with the profile whose output directory is `profile_dir`,
/// so the binary lands beside this test executable's own and shares its compiled dependencies.
///
/// It is `cargo test --no-run -p a2a-egress -p a2a-agent --test agent` rather than
/// `cargo build -p a2a-agent`: cargo unifies features over the selected packages, and over their
/// dev-dependencies only when a test target is built, so `cargo build -p a2a-agent` resolves
/// other features than the gateway's test build (getrandom's, say) and compiles a second copy of
/// the graph from pingora up. With both packages and a test target selected the features are the
/// gateway's test build's (and `cargo test --workspace`'s): only the agent's own crates compile.
/// Selecting the agent's suite (`agent`) makes cargo build the agent's binary.
fn build_agent(cargo: &std::ffi::OsStr, target_dir: &Path, profile_dir: &str) {
    let mut cmd = Command::new(cargo);
    // What cargo set for this test process, not what a user set: ring's build script reruns when
    // `CARGO_PKG_NAME`, `OUT_DIR` and the like change in the *calling* cargo's environment, and a
    // rerun here would rebuild half the graph, then the next plain `cargo test` would rebuild it
    // back (seen: minutes per run, each way).
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if set_by_cargo_for_tests(key) {
            cmd.env_remove(key);
        }
    }
    cmd.args(["test", "--no-run", "--quiet"]);
    match profile_dir {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let out = cmd
        .arg("--manifest-path")
        .arg(workspace_manifest())
        .args(["-p", "a2a-egress", "-p", "a2a-agent", "--test", "agent"])
        .arg("--target-dir")
        .arg(target_dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo:?} to build a2a-agent: {e}"));
    assert!(
        out.status.success(),
        "building a2a-agent failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The workspace's `Cargo.toml`: the nearest directory above this package's manifest that holds
/// `Cargo.lock` (the gateway's package is the workspace root, the agent's is `agent/`).
fn workspace_manifest() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .unwrap_or(manifest)
        .join("Cargo.toml")
}

/// Whether `key` is one of the variables cargo sets for the test executables it runs (and so
/// says nothing about how the user builds).
fn set_by_cargo_for_tests(key: &str) -> bool {
    key.starts_with("CARGO_PKG_")
        || key.starts_with("CARGO_BIN_EXE_")
        || matches!(
            key,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "OUT_DIR"
        )
}
