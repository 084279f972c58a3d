#!/usr/bin/env bash
# The README's run command: the gateway in front of the bundled reference agent, with a real call.
#
#   bash scripts/run.sh          # start both, show calls through the gateway, keep running (Ctrl-C stops)
#   bash scripts/run.sh --once   # the same, then stop both (used to check this script)
#
# Installs cmake when missing (pingora's build needs it), builds both binaries, starts
#   - the reference agent (`a2a-agent`) on 127.0.0.1:7400 (config/agent/registry.toml),
#   - the gateway on 127.0.0.1:7411 (data plane) and 127.0.0.1:7412 (admin), config/gateway.toml,
# then fetches the effective card and sends SendMessage and SendStreamingMessage through the
# gateway with curl. Logs go to target/demo/*.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ONCE=0
[ "${1:-}" = "--once" ] && ONCE=1

say() { printf '\n==> %s\n' "$*"; }

if ! command -v cmake >/dev/null 2>&1; then
    say "installing cmake (needed to build pingora)"
    if [ "$(id -u)" -eq 0 ]; then apt-get update -qq && apt-get install -y -qq cmake
    else sudo apt-get update -qq && sudo apt-get install -y -qq cmake; fi
fi

say "building a2a-egress and a2a-agent"
cargo build --quiet --bin a2a-egress
cargo build --quiet -p a2a-agent --bin a2a-agent
BIN="${CARGO_TARGET_DIR:-target}/debug/a2a-egress"
AGENT_BIN="${CARGO_TARGET_DIR:-target}/debug/a2a-agent"
mkdir -p target/demo

# Demo tokens only: the agent accepts the partner token, the gateway sends it (from its env var).
export A2A_AGENT_TOKEN_PARTNER=partner-demo-token
export A2A_AGENT_TOKEN_VIEWER=viewer-demo-token
export A2A_AGENT_TOKEN_OTHER=other-demo-token
export A2A_EGRESS_FINANCE_TOKEN=partner-demo-token

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

# Starts "$@" in the background, logging stderr to $LOG and stdout to $LOG.out; waits for its
# first stdout line (the JSON "listening" line both commands print) and echoes it.
start() {
    local log=$1; shift
    "$@" >"$log.out" 2>"$log" &
    PIDS+=($!)
    for _ in $(seq 1 300); do
        if [ -s "$log.out" ]; then head -n1 "$log.out"; return 0; fi
        if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then cat "$log" >&2; return 1; fi
        sleep 0.1
    done
    echo "timed out waiting for $*" >&2; cat "$log" >&2; return 1
}

say "starting the reference agent on 127.0.0.1:7400"
start target/demo/agent.log "$AGENT_BIN" --registry config/agent/registry.toml --listen 127.0.0.1:7400

say "starting the gateway (data plane 127.0.0.1:7411, admin 127.0.0.1:7412)"
start target/demo/gateway.log "$BIN" serve --config config/gateway.toml

for _ in $(seq 1 100); do
    curl -fsS http://127.0.0.1:7412/readyz >/dev/null 2>&1 && break
    sleep 0.1
done
say "readiness: curl http://127.0.0.1:7412/readyz"
curl -sS http://127.0.0.1:7412/readyz; echo

say "effective card: curl http://127.0.0.1:7411/agents/finance/.well-known/agent-card.json"
curl -sS http://127.0.0.1:7411/agents/finance/.well-known/agent-card.json; echo

say "SendMessage through the gateway"
curl -sS http://127.0.0.1:7411/agents/finance \
    -H 'content-type: application/json' -H 'A2A-Egress-Data-Class: internal' \
    -d '{"jsonrpc":"2.0","id":"demo-1","method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"echo hello through the gateway"}]}}}'
echo

say "SendStreamingMessage through the gateway (SSE, event by event)"
curl -sS -N http://127.0.0.1:7411/agents/finance \
    -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":"demo-2","method":"SendStreamingMessage","params":{"message":{"messageId":"m-2","role":"ROLE_USER","parts":[{"text":"stream a report in 3 parts"}]}}}'
echo

say "a refusal: data class 'secret' is not allowed for this integration"
curl -sS http://127.0.0.1:7411/agents/finance \
    -H 'content-type: application/json' -H 'A2A-Egress-Data-Class: secret' \
    -d '{"jsonrpc":"2.0","id":"demo-3","method":"SendMessage","params":{"message":{"messageId":"m-3","role":"ROLE_USER","parts":[{"text":"echo hi"}]}}}'
echo

say "metrics: curl http://127.0.0.1:7412/metrics (a2a_egress_requests_total)"
curl -sS http://127.0.0.1:7412/metrics | grep '^a2a_egress_requests_total' || true

if [ "$ONCE" = 1 ]; then
    say "done (--once): stopping"
    exit 0
fi
say "gateway and agent keep running; point an A2A client at http://127.0.0.1:7411/agents/finance/ (Ctrl-C stops)"
wait
