#!/usr/bin/env bash
# The one test command of a2a-egress (README and CI call it).
#
# On a fresh Debian machine with rustup and python3 it installs what is missing, then runs the
# same gates CI runs:
#   1. cmake (pingora's zlib-ng build needs it), nftables (`nft`: the deploy boundary's test runs
#      the shipped rules in a network namespace, as root) and systemd (`systemd-analyze`: it
#      verifies the boundary's unit and drop-in), each via apt-get when absent;
#   2. .venv with the pinned official Python a2a-sdk peer (tests/peers/requirements.txt), rebuilt
#      when the requirements change (a stamp file records their hash), .venv03 the same way with
#      the pinned 0.3 Python peer (tests/peers/v03/requirements.txt), and the pinned official JS
#      SDK peers (tests/peers/js and the 0.3 agent tests/peers/js03, `npm ci` from each one's
#      package-lock.json; needs node >= 20);
#   3. cargo-deny (licenses, bans, sources; deny.toml), installed with cargo when absent;
#   4. the module layering and function length (scripts/check-layers.sh, check-structure.sh);
#   5. cargo fmt --check, cargo clippy -D warnings, cargo doc -D warnings, cargo test --all-targets,
#      each over the whole workspace (the gateway `a2a-egress` and the reference agent `agent/`);
#   6. `a2a-egress check` of the sample config's lockfile against a freshly started reference agent.
# Integration tests find the peers' interpreters through A2A_EGRESS_PYTHON and A2A_EGRESS_PYTHON_V03.
# Run it as root: the deploy boundary's test (tests/integration/deploy_boundary.rs) creates
# network namespaces and nftables tables, and fails, saying so, without root.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

say() { printf '==> %s\n' "$*"; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    say "installing $* with apt-get (needs root)"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@"
}

# --- system packages -------------------------------------------------------------------------
if ! command -v cmake >/dev/null 2>&1; then
    apt_install cmake
else
    say "cmake present ($(cmake --version | head -n1))"
fi
# nft and systemd-analyze are often in sbin, which a non-root PATH may lack: look there too.
if ! PATH="$PATH:/usr/sbin:/sbin" command -v nft >/dev/null 2>&1; then
    apt_install nftables
else
    say "nft present ($(PATH="$PATH:/usr/sbin:/sbin" nft --version))"
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
    apt_install systemd
else
    say "systemd-analyze present ($(systemd-analyze --version | head -n1))"
fi

# --- Python test peers (official a2a-sdk 1.3.0, and 0.3.26 for the 0.3 peer), one venv each ------
# ensure_venv DIR REQUIREMENTS WHAT: (re)creates DIR with exactly REQUIREMENTS when it is missing
# or the file changed since (a stamp of its hash is kept inside DIR).
ensure_venv() {
    local venv="$1" req="$2" what="$3" stamp="$1/.a2a-egress-requirements.sha256" want have
    want="$(sha256sum "$req" | cut -d' ' -f1)"
    have="$(cat "$stamp" 2>/dev/null || true)"
    if [ -x "$venv/bin/python" ] && [ "$want" = "$have" ]; then
        say "$what up to date in $venv"
        return
    fi
    say "creating $venv with the pinned $what ($req)"
    rm -rf "$venv"
    if ! python3 -m venv "$venv" 2>/dev/null; then
        rm -rf "$venv"
        apt_install python3-venv
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    echo "$want" > "$stamp"
}
ensure_venv "$ROOT/.venv" tests/peers/requirements.txt "Python peers"
export A2A_EGRESS_PYTHON="$ROOT/.venv/bin/python"
ensure_venv "$ROOT/.venv03" tests/peers/v03/requirements.txt "0.3 Python peer"
export A2A_EGRESS_PYTHON_V03="$ROOT/.venv03/bin/python"

# --- JS test peers (official @a2a-js/sdk: 1.3.0 for card signatures, 0.3.14 as a 0.3 agent) -----
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
    echo "node $(node --version) is too old for @a2a-js/sdk (needs >= 20)" >&2
    exit 1
fi
# ensure_npm DIR WHAT: `npm ci` in DIR when node_modules is missing or package-lock.json changed
# since (a stamp of its hash is kept inside DIR/node_modules).
ensure_npm() {
    local dir="$1" what="$2" stamp="$1/node_modules/.a2a-egress-lock.sha256" want
    want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
    if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ]; then
        say "$what up to date in $dir/node_modules"
        return
    fi
    say "installing the pinned $what into $dir/node_modules (npm ci)"
    (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --quiet)
    echo "$want" > "$stamp"
}
ensure_npm tests/peers/js "JS SDK peer"
ensure_npm tests/peers/js03 "JS 0.3 SDK agent"

# --- dependency policy (cargo-deny, deny.toml) ----------------------------------------------------
# Licenses, bans (no OpenSSL) and sources, offline: the advisory database is a git repository the
# test machines cannot reach. Installing cargo-deny from crates.io takes about 3 minutes on 2 cores.
if ! cargo deny --version >/dev/null 2>&1; then
    say "installing cargo-deny (cargo install --locked)"
    cargo install cargo-deny --locked
fi
HOST_TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
# --offline needs every crate of the graph locally, including on a fresh machine.
cargo fetch --locked --target "$HOST_TRIPLE" --quiet
say "cargo deny --offline check licenses bans sources (target $HOST_TRIPLE)"
cargo deny --offline --target "$HOST_TRIPLE" check --hide-inclusion-graph licenses bans sources

# --- module structure (ARCHITECTURE.md "Modules, top to bottom") ------------------------------------
# Cheap, so first: no module imports a layer above it, and no function is over 100 lines (each
# script lists its known exceptions).
say "scripts/check-layers.sh"
scripts/check-layers.sh
say "scripts/check-structure.sh"
scripts/check-structure.sh

# --- Rust gates --------------------------------------------------------------------------------
say "cargo fmt --all -- --check"
cargo fmt --all -- --check

say "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

# Seconds on top of clippy's build: a broken or private intra-doc link fails here, not on a reader.
say "cargo doc --workspace --no-deps (RUSTDOCFLAGS=-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

# --all-targets builds benches in test mode (each runs once, quickly); it never runs them as benchmarks.
# The gateway's tests start the reference agent's binary, which this same command builds (the
# agent's own integration tests need it); tests/integration/common/agent_bin.rs says how they find it.
say "cargo test --workspace --all-targets"
cargo test --workspace --all-targets

# --- the sample workflow's lockfile against the bundled agent ----------------------------------
# config/locks/finance.json records what the sample `finance` integration needs from the reference
# agent. Start that agent (port 0), point a temporary copy of the sample config at it, and run
# `a2a-egress check`: CI fails (exit 3 review, 4 breaking) when the bundled agent drifts from what
# the sample workflow needs. Re-pin after an intended change: `a2a-egress lock finance` with the
# agent on 127.0.0.1:7400 (scripts/run.sh starts it there).
say "a2a-egress check: config/locks/finance.json against the bundled reference agent"
cargo build --quiet --bin a2a-egress
cargo build --quiet -p a2a-agent --bin a2a-agent
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/a2a-egress"
AGENT_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/a2a-agent"
CHECK_DIR="$(mktemp -d)"
A2A_AGENT_TOKEN_PARTNER=partner-demo-token "$AGENT_BIN" --registry config/agent/registry.toml \
    --listen 127.0.0.1:0 --watch-interval-ms 0 >"$CHECK_DIR/agent.out" 2>"$CHECK_DIR/agent.log" &
AGENT_PID=$!
stop_agent() { kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; rm -rf "$CHECK_DIR"; }
trap stop_agent EXIT
for _ in $(seq 1 300); do
    [ -s "$CHECK_DIR/agent.out" ] && break
    kill -0 "$AGENT_PID" 2>/dev/null || { cat "$CHECK_DIR/agent.log" >&2; exit 1; }
    sleep 0.1
done
# The agent's first stdout line: {"event":"listening","addr":"127.0.0.1:PORT",...}
AGENT_ADDR="$(head -n1 "$CHECK_DIR/agent.out" | sed -n 's/.*"addr":"\([^"]*\)".*/\1/p')"
[ -n "$AGENT_ADDR" ] || { echo "the reference agent did not start" >&2; cat "$CHECK_DIR/agent.log" >&2; exit 1; }
sed "s/127\.0\.0\.1:7400/$AGENT_ADDR/g" config/gateway.toml >"$CHECK_DIR/gateway.toml"
cp -r config/locks "$CHECK_DIR/locks"
A2A_EGRESS_FINANCE_TOKEN=partner-demo-token "$BIN" check --config "$CHECK_DIR/gateway.toml"
# And the card's claims still hold against the agent's behaviour (exit 1 when one does not).
A2A_EGRESS_FINANCE_TOKEN=partner-demo-token "$BIN" probe finance --config "$CHECK_DIR/gateway.toml"
stop_agent
trap - EXIT

say "all checks passed"
