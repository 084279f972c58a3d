#!/usr/bin/env bash
# Soak test of a2a-egress: the gateway in front of the bundled reference agent, on loopback only,
# loaded at half of its measured saturation while the control plane churns underneath it
# (forced refreshes, agent registry reloads that change the compiled profile, gateway config
# reloads, SIGHUPs). Bounded in time; never part of CI.
#
#   bash scripts/soak.sh [SECONDS]      # default 180 s of load after a 5 s saturation probe
#   SOAK_CHURN=0 bash scripts/soak.sh   # the same load without the control-plane churn
#
# Pass criteria, printed at the end and written to target/soak/summary.txt:
#   - zero failed requests (non-2xx HTTP answers, transport errors, or gateway outcomes other than
#     "ok" counted in a2a_egress_requests_total during the soak);
#   - RSS and open file descriptors of the gateway flat: the figures at start and end of the load.
#
# Installs what it lacks: wrk (saturation, from Debian) and oha (fixed-rate load, from crates.io).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
DURATION="${1:-180}"
OUT="$ROOT/target/soak"
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.out "$OUT"/samples.txt

say() { printf '==> %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

command -v cmake >/dev/null || { as_root apt-get update -qq; as_root apt-get install -y -qq cmake; }
command -v wrk >/dev/null || { as_root apt-get update -qq; as_root apt-get install -y -qq wrk; }
command -v oha >/dev/null || { say "installing oha"; cargo install oha --locked --quiet; }
export PATH="$HOME/.cargo/bin:$PATH"

say "building release binaries"
cargo build --release --quiet --bin a2a-egress
cargo build --release --quiet -p a2a-agent --bin a2a-agent
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/a2a-egress"
AGENT_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/a2a-agent"

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

# Starts "$@" in the background (stdout to $1.out, stderr to $1.log); waits for its first stdout line.
start() {
    local log=$1; shift
    "$@" >"$log.out" 2>"$log.log" &
    PIDS+=($!)
    for _ in $(seq 1 300); do
        if [ -s "$log.out" ]; then return 0; fi
        kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$log.log" >&2; return 1; }
        sleep 0.1
    done
    echo "timed out waiting for $*" >&2; return 1
}
json_field() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())[sys.argv[2]])" "$@"; }

export A2A_AGENT_TOKEN_PARTNER=partner-soak-token
export A2A_AGENT_TOKEN_VIEWER=viewer-soak-token
export A2A_AGENT_TOKEN_OTHER=other-soak-token
export A2A_EGRESS_FINANCE_TOKEN=partner-soak-token
export RUST_LOG=warn

# The agent serves a copy of the sample registry, which the soak edits to change the card.
cp config/agent/registry.toml "$OUT/registry.toml"
start "$OUT/agent" "$AGENT_BIN" --registry "$OUT/registry.toml" --listen 127.0.0.1:0
AGENT_PID=${PIDS[-1]}
AGENT_ADDR=$(json_field "$OUT/agent.out" addr)

# Gateway config: the sample, on port 0, pointed at this agent, with a short refresh period.
sed -e "s#127.0.0.1:7400#$AGENT_ADDR#g" \
    -e 's#^proxy = .*#proxy = "127.0.0.1:0"#' -e 's#^admin = .*#admin = "127.0.0.1:0"#' \
    -e 's#^min = .*#min = "1s"#' -e 's#^default = .*#default = "2s"#' \
    -e 's#^stale_min_interval = .*#stale_min_interval = "1s"#' \
    config/gateway.toml > "$OUT/gateway.toml"
start "$OUT/gateway" "$BIN" serve --config "$OUT/gateway.toml"
GW_PID=${PIDS[-1]}
PROXY=$(json_field "$OUT/gateway.out" proxy)
ADMIN=$(json_field "$OUT/gateway.out" admin)
for _ in $(seq 1 100); do curl -fsS "http://$ADMIN/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://$ADMIN/readyz" >/dev/null

URL="http://$PROXY/agents/finance"
BODY='{"jsonrpc":"2.0","id":"soak","method":"SendMessage","params":{"message":{"messageId":"m-soak","role":"ROLE_USER","parts":[{"text":"echo soak"}]}}}'
printf '%s' "$BODY" > "$OUT/body.json"
cat > "$OUT/post.lua" <<EOF
wrk.method = "POST"
wrk.body = [[$BODY]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Egress-Data-Class"] = "internal"
EOF

say "saturation probe: wrk, 4 connections, 5 s"
wrk -t1 -c4 -d5s -s "$OUT/post.lua" "$URL" > "$OUT/saturation.txt"
SAT=$(awk '/Requests\/sec/ {print int($2)}' "$OUT/saturation.txt")
RATE=$(( SAT / 2 ))
[ "$RATE" -ge 1 ] || { echo "saturation probe failed"; cat "$OUT/saturation.txt"; exit 1; }
say "saturation ≈ $SAT req/s; soaking at $RATE req/s for ${DURATION}s"

snapshot() { # prints "rss_kb fds anon_kb"
    local rss fds anon
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$GW_PID/status")
    anon=$(awk '/RssAnon/ {print $2}' "/proc/$GW_PID/status")
    fds=$(ls "/proc/$GW_PID/fd" | wc -l)
    echo "$rss $fds $anon"
}
outcomes() { curl -fsS "http://$ADMIN/metrics" | awk '/^a2a_egress_requests_total/ {split($0,a,"outcome=\""); split(a[2],b,"\""); n[b[1]]+=$NF} END {for (k in n) printf "%s=%d ", k, n[k]; print ""}'; }

BEFORE_OUT=$(outcomes)
read -r RSS0 FD0 _ < <(snapshot)

# Churn: forced refreshes, profile-changing registry edits with agent reloads, config reloads.
churn() {
    local i=0
    while kill -0 "$GW_PID" 2>/dev/null; do
        i=$((i + 1))
        [ "${SOAK_CHURN:-1}" = 1 ] || { echo "$(date +%s) $(snapshot)" >> "$OUT/samples.txt"; sleep 2; continue; }
        curl -fsS -X POST "http://$ADMIN/v1/integrations/finance/refresh" >/dev/null 2>&1 || true
        if [ $((i % 3)) -eq 0 ]; then
            # A skill description edit: a compatible profile change, swapped in by the next refresh.
            sed -i "s#^description = \"Repeats the text it receives.*#description = \"Repeats the text it receives, unchanged (edit $i).\"#" "$OUT/registry.toml"
            kill -HUP "$AGENT_PID" 2>/dev/null || true
        fi
        if [ $((i % 4)) -eq 0 ]; then
            # A config edit the gateway applies by difference, then a SIGHUP on top of the file watch.
            sed -i "s#^default_data_class = .*#default_data_class = \"internal\"  \# reload $i#" "$OUT/gateway.toml"
            kill -HUP "$GW_PID" 2>/dev/null || true
        fi
        echo "$(date +%s) $(snapshot)" >> "$OUT/samples.txt"
        sleep 2
    done
}
churn &
CHURN_PID=$!

oha --no-tui -w -z "${DURATION}s" -q "$RATE" -c 8 -m POST \
    -H 'Content-Type: application/json' -H 'A2A-Egress-Data-Class: internal' \
    -D "$OUT/body.json" --output-format json "$URL" > "$OUT/oha.json"
kill "$CHURN_PID" 2>/dev/null || true
wait "$CHURN_PID" 2>/dev/null || true

read -r RSS1 FD1 _ < <(snapshot)
AFTER_OUT=$(outcomes)
RELOADS=$(curl -fsS "http://$ADMIN/metrics" | awk '/^a2a_egress_(config_reloads|profile_swaps)_total/ {s = s $0 "; "} END {print s}')

python3 - "$OUT/oha.json" "$BEFORE_OUT" "$AFTER_OUT" "$RSS0" "$RSS1" "$FD0" "$FD1" "$RATE" "$SAT" "$DURATION" "$RELOADS" "$OUT/samples.txt" > "$OUT/summary.txt" <<'PY'
import json, sys
oha = json.load(open(sys.argv[1]))
def parse(s):
    return {k: int(v) for k, v in (kv.split("=") for kv in s.split())}
before, after = parse(sys.argv[2]), parse(sys.argv[3])
delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
codes = oha.get("statusCodeDistribution", {})
errors = oha.get("errorDistribution", {})
total = sum(codes.values()) + sum(errors.values())
bad_http = sum(v for k, v in codes.items() if not k.startswith("2"))
bad_outcomes = sum(v for k, v in delta.items() if k != "ok")
rss0, rss1, fd0, fd1 = map(int, sys.argv[4:8])
ok = bad_http == 0 and not errors and bad_outcomes == 0
print(f"soak: {sys.argv[10]} s at {sys.argv[8]} req/s (saturation probe {sys.argv[9]} req/s), loopback")
print(f"requests sent: {total}; HTTP status codes: {codes}; transport errors: {errors or 0}")
print(f"gateway outcomes during the soak: {delta}")
print(f"gateway RSS: {rss0} kB at start, {rss1} kB at end ({(rss1 - rss0):+d} kB)")
print(f"gateway open fds: {fd0} at start, {fd1} at end")
# RSS every 2 s under load: growth that stops after warm-up is buffers and allocator arenas
# filling; growth that goes on to the end is a leak.
samples = [tuple(map(int, l.split()[1:])) for l in open(sys.argv[12]) if len(l.split()) == 4]
if samples:
    at = [samples[min(len(samples) - 1, i * (len(samples) - 1) // 4)] for i in range(5)]
    print("gateway RSS under load at 0/25/50/75/100% of the soak (kB): " + " / ".join(str(s[0]) for s in at))
    print("  of which anonymous (heap, stacks) (kB):                  " + " / ".join(str(s[2]) for s in at))
print(f"config reloads and profile swaps: {sys.argv[11]}")
lat = oha.get("latencyPercentiles", {})
print("latency p50/p99/p99.9 (ms): " + "/".join(f"{(lat.get(p) or 0) * 1000:.2f}" for p in ("p50", "p99", "p99.9")))
print("RESULT: " + ("PASS" if ok else "FAIL"))
PY
cat "$OUT/summary.txt"
grep -q "RESULT: PASS" "$OUT/summary.txt"
