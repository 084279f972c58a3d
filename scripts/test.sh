#!/usr/bin/env bash
# The one test command of a2a-egress (README and CI call it).
#
# On a fresh Debian machine with rustup and python3 it installs what is missing, then runs the
# same gates CI runs:
#   1. cmake (pingora's zlib-ng build needs it), via apt-get when absent;
#   2. .venv with the pinned official Python a2a-sdk peer (tests/peers/requirements.txt), rebuilt
#      when the requirements change (a stamp file records their hash);
#   3. cargo-deny (licenses, bans, sources; deny.toml), installed with cargo when absent;
#   4. the module layering (scripts/check-layers.sh);
#   5. cargo fmt --check, cargo clippy -D warnings, cargo test --all-targets.
# Integration tests find the peer's interpreter through A2A_EGRESS_PYTHON.
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

# --- Python test peers (official a2a-sdk) ------------------------------------------------------
REQ="tests/peers/requirements.txt"
VENV="$ROOT/.venv"
STAMP="$VENV/.a2a-egress-requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ ! -x "$VENV/bin/python" ] || [ "$want" != "$have" ]; then
    say "creating $VENV with the pinned Python peers ($REQ)"
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" 2>/dev/null; then
        rm -rf "$VENV"
        apt_install python3-venv
        python3 -m venv "$VENV"
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
    echo "$want" > "$STAMP"
else
    say "Python peers up to date in $VENV"
fi
export A2A_EGRESS_PYTHON="$VENV/bin/python"

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
# Cheap, so first: no module imports a layer above it (the script lists the known exceptions).
say "scripts/check-layers.sh"
scripts/check-layers.sh

# --- Rust gates --------------------------------------------------------------------------------
say "cargo fmt --all -- --check"
cargo fmt --all -- --check

say "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

# --all-targets builds benches in test mode (each runs once, quickly); it never runs them as benchmarks.
say "cargo test --all-targets"
cargo test --all-targets

say "all checks passed"
