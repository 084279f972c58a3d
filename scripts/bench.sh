#!/usr/bin/env bash
# The benchmark of a2a-egress beside nginx and a bare pingora proxy, in one sitting.
#
#   bash scripts/bench.sh            # the whole run (about 15 minutes on 2 cores)
#   bash scripts/bench.sh --quick    # one short round of everything (about 3 minutes), for development
#   bash scripts/bench.sh --instructions  # only instructions per request under callgrind (bare
#                                         # pingora, a2a-egress with its access log on and off):
#                                         # a figure the machine's load does not move; no RESULTS.md
#   bash scripts/bench.sh --telemetry     # only the traces row: CPU per request with every call
#                                         # traced (OTLP/HTTP to a local receiver) vs untraced,
#                                         # printed; no RESULTS.md
#   bash scripts/bench.sh --instructions --telemetry  # the traces row in instructions per request
#                                         # (callgrind, every thread: the span queue's and the
#                                         # exporter's too), traced vs untraced; printed
#   bash scripts/bench.sh --guard         # only the content guard rows: CPU per request with every
#                                         # built-in detector on (action record, bodies without a
#                                         # finding) vs off, 1 KB and 64 KB SendMessage, as ratios,
#                                         # and the 64 KB scanning share vs 64x the 1 KB one;
#                                         # printed; no RESULTS.md
#   bash scripts/bench.sh --instructions --guard  # the guard rows in instructions per request
#                                         # (callgrind, every thread), guard on vs off; printed
#   bash scripts/bench.sh --constrained   # only the constrained-sidecar section (one CPU, half a
#                                         # CPU in a cgroup quota, two CPUs; periodic jobs), about
#                                         # 10 minutes, written to $CARGO_TARGET_DIR/bench-constrained/
#                                         # RESULTS.md; the whole run includes it in benches/RESULTS.md
#
# On a fresh Debian machine it installs what it lacks: nginx-light (stub_status, for counting
# upstream connections), wrk and valgrind (callgrind: instructions per request) from the
# distribution, oha (fixed-rate latency with coordinated-omission correction) with
# `cargo install --locked`, cmake (pingora's build); then it
# builds the release binaries (a2a-egress on mimalloc, the same on the system allocator, and
# benches/bare_pingora.rs), runs the criterion
# micro-benchmarks briefly (compile, policy, guard), and runs benches/bench.py: every proxy under test pinned to CPU 0,
# load generators and upstreams to CPU 1, every load run bounded in time. It writes
# benches/RESULTS.md (ratios, raw figures, machine, versions, date, load average) and keeps the
# raw logs under $CARGO_TARGET_DIR/bench (default target/bench). Needs 2 CPUs at least.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
QUICK=""
ONLY_INSTRUCTIONS=""
ONLY_CONSTRAINED=""
ONLY_TELEMETRY=""
ONLY_GUARD=""
for a in "$@"; do
    case "$a" in
        --quick) QUICK="--quick" ;;
        --instructions) ONLY_INSTRUCTIONS=1 ;;
        --constrained) ONLY_CONSTRAINED=1 ;;
        --telemetry) ONLY_TELEMETRY=1 ;;
        --guard) ONLY_GUARD=1 ;;
        *) echo "usage: scripts/bench.sh [--quick] [--instructions | --constrained | --telemetry | --instructions --telemetry | --guard | --instructions --guard]" >&2; exit 64 ;;
    esac
done

say() { printf '==> %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
APT_UPDATED=""
apt_install() {
    say "installing $* with apt-get (needs root)"
    [ -n "$APT_UPDATED" ] || { as_root apt-get update -qq; APT_UPDATED=1; }
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@"
}

[ "$(nproc)" -ge 2 ] || { echo "bench.sh pins the proxy and the load to two different CPUs: needs 2" >&2; exit 1; }
export PATH="$HOME/.cargo/bin:/usr/sbin:/sbin:$PATH"
command -v cmake >/dev/null || apt_install cmake
command -v nginx >/dev/null || apt_install nginx-light
command -v wrk >/dev/null || apt_install wrk
command -v taskset >/dev/null || apt_install util-linux
command -v ss >/dev/null || apt_install iproute2
command -v pgrep >/dev/null || apt_install procps
command -v python3 >/dev/null || apt_install python3
# callgrind: instructions per request, a figure the machine's load does not move.
command -v valgrind >/dev/null || apt_install valgrind
if ! command -v oha >/dev/null; then
    say "installing oha (cargo install oha --locked)"
    cargo install oha --locked --quiet
fi

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
say "building release binaries (a2a-egress, a2a-agent, benches/bare_pingora.rs)"
# The gateway in a cargo call of its own: an example in the same call turns on the dev-dependencies,
# and the self dev-dependency's `testkit` feature would then be unified into the binary measured
# here (`cargo +nightly build --unit-graph --release --bin a2a-egress --example bare-pingora`
# shows it), so it would not be the binary that ships.
cargo build --release --locked --quiet --bin a2a-egress
cargo build --release --locked --quiet --example bare-pingora
cargo build --release --locked --quiet -p a2a-agent --bin a2a-agent

# only_run DIR WHAT FLAGS...: one of the single-row modes, its raw logs in $TARGET/DIR, its figures
# printed (no RESULTS.md).
only_run() {
    local dir="$1" what="$2"
    shift 2
    OUT="$TARGET/$dir"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    say "$what (raw logs in $OUT)"
    exec python3 benches/bench.py "$@" --bin "$TARGET/release/a2a-egress" \
        --agent-bin "$TARGET/release/a2a-agent" --bare "$TARGET/release/examples/bare-pingora" --root "$ROOT" --out "$OUT" \
        --results /dev/null --target-dir "$TARGET"
}

if [ -n "$ONLY_INSTRUCTIONS" ] && [ -n "$ONLY_TELEMETRY" ]; then
    only_run bench-telemetry-instructions "instructions per request, traces on vs off (callgrind)" \
        $QUICK --instructions-only --telemetry-only
fi
if [ -n "$ONLY_INSTRUCTIONS" ] && [ -n "$ONLY_GUARD" ]; then
    only_run bench-guard-instructions "instructions per request, content guard on vs off (callgrind)" \
        $QUICK --instructions-only --guard-only
fi
if [ -n "$ONLY_INSTRUCTIONS" ]; then
    only_run bench-instructions "instructions per request (callgrind)" --instructions-only
fi
if [ -n "$ONLY_TELEMETRY" ]; then
    only_run bench-telemetry "traces on vs off, CPU per request" $QUICK --telemetry-only
fi
if [ -n "$ONLY_GUARD" ]; then
    only_run bench-guard "content guard on vs off, CPU per request" $QUICK --guard-only
fi

if [ -n "$ONLY_CONSTRAINED" ]; then
    OUT="$TARGET/bench-constrained"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    say "constrained sidecars only (raw logs in $OUT)"
    exec python3 benches/bench.py $QUICK --constrained-only --bin "$TARGET/release/a2a-egress" \
        --agent-bin "$TARGET/release/a2a-agent" --bare "$TARGET/release/examples/bare-pingora" --root "$ROOT" --out "$OUT" \
        --results "$OUT/RESULTS.md" --target-dir "$TARGET"
fi

# Criterion micro-benchmarks, briefly (their figures go into RESULTS.md).
say "criterion micro-benchmarks (compile, policy, guard)"
rm -rf "$TARGET/criterion"
if [ -n "$QUICK" ]; then CRIT=(--warm-up-time 0.5 --measurement-time 1); else CRIT=(--warm-up-time 1 --measurement-time 3); fi
cargo bench --locked --quiet --bench compile --bench policy --bench guard -- "${CRIT[@]}" >"$TARGET/criterion-run.log" 2>&1 \
    || { tail -n 30 "$TARGET/criterion-run.log" >&2; exit 1; }

# The same gateway on the system allocator (benches/system_alloc.rs: the binary's allocator
# differs; being an example, its library is built with `testkit`, code the gateway never runs),
# for the side-by-side rows.
say "building the system-allocator gateway (benches/system_alloc.rs)"
cargo build --release --locked --quiet --example a2a-egress-system-alloc

OUT="$TARGET/bench"
rm -rf "$OUT"
mkdir -p "$OUT"
say "load benchmark (raw logs in $OUT)"
python3 benches/bench.py $QUICK --bin "$TARGET/release/a2a-egress" \
    --agent-bin "$TARGET/release/a2a-agent" --bare "$TARGET/release/examples/bare-pingora" --root "$ROOT" --out "$OUT" \
    --alt-bin "$TARGET/release/examples/a2a-egress-system-alloc" --alt-label "system allocator" \
    --results "$ROOT/benches/RESULTS.md" --target-dir "$TARGET"
say "results: $ROOT/benches/RESULTS.md"
