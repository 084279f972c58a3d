#!/usr/bin/env python3
"""Load benchmark of a2a-egress beside nginx and a bare pingora proxy; writes benches/RESULTS.md.

Run through `scripts/bench.sh` (which installs nginx, wrk and oha and builds the release binaries);
this file only drives processes (python3 standard library only). Every process it starts is
stopped at the end, every load run is bounded in time, and all listeners are on loopback.

Pinning: every proxy under test runs on CPU 0; the load generators (wrk, oha, the SSE client) and
the upstreams (a fixed-reply nginx, the bundled reference agent) on CPU 1. Scenarios are
interleaved round by round, so a neighbour's burst of load spreads over all of them.
"""

import argparse
import datetime
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import constrained

CPU_PROXY = "0"
CPU_LOAD = "1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
CONNECTIONS = 32
RATE_CONNECTIONS = 16

# ---------------------------------------------------------------------------------------------
# processes


class Procs:
    """Every process the bench started, stopped (TERM, then KILL) at exit."""

    def __init__(self, out):
        self.out = out
        self.items = []

    def start(self, name, argv, cpu, env=None, first_line=False, cwd=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        stdout = open(os.path.join(self.out, f"{name}.out"), "w")
        stderr = open(os.path.join(self.out, f"{name}.log"), "w")
        # cpu None: unpinned (the constrained section's two-CPU placement).
        p = subprocess.Popen(
            (["taskset", "-c", cpu] if cpu else []) + argv,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
        )
        self.items.append((name, p))
        line = None
        if first_line:
            path = os.path.join(self.out, f"{name}.out")
            deadline = time.time() + 60
            while time.time() < deadline:
                with open(path) as f:
                    line = f.readline()
                if line.endswith("\n"):
                    break
                if p.poll() is not None:
                    raise SystemExit(f"{name} exited: see {self.out}/{name}.log")
                time.sleep(0.05)
            else:
                raise SystemExit(f"{name} printed nothing in 60 s: see {self.out}/{name}.log")
            line = json.loads(line)
        return p, line

    def stop(self, p, timeout=10):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop_all(self):
        for _, p in reversed(self.items):
            self.stop(p)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def wait_ready(admin, timeout=120, want=None):
    """Polls /readyz until 200 (and `want(detail)` holds); returns seconds waited."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        code, body = http_get(f"http://{admin}/readyz")
        if code == 200 and (want is None or want(json.loads(body))):
            return time.time() - t0
        time.sleep(0.01)
    raise SystemExit(f"gateway at {admin} not ready after {timeout} s")


# ---------------------------------------------------------------------------------------------
# /proc figures


def pids_of(p):
    """The process and its children (nginx: master and worker)."""
    pids = [p.pid]
    try:
        out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
        pids += [int(x) for x in out.stdout.split()]
    except OSError:
        pass
    return pids


def cpu_ticks(p):
    total = 0
    for pid in pids_of(p):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total


def status_kb(p, key):
    total = 0
    for pid in pids_of(p):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def threads(p):
    try:
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Accepts:
    """Connections an nginx upstream accepted and requests it served (stub_status)."""

    def __init__(self, port):
        self.url = f"http://127.0.0.1:{port}/nginx_status"

    def read(self):
        _, body = http_get(self.url)
        m = re.search(rb"\s(\d+)\s+(\d+)\s+(\d+)\s", body)
        return (int(m.group(1)), int(m.group(3))) if m else (0, 0)


class PortWatch(threading.Thread):
    """Distinct TCP connections seen to an upstream port (sampled with `ss` every 200 ms): an
    estimate of connections opened during a run where the upstream cannot count them."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.seen = set()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            out = subprocess.run(
                ["ss", "-Htn", "state", "established", f"( dport = :{self.port} )"],
                capture_output=True,
                text=True,
            ).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) >= 4:
                    self.seen.add(parts[-2])
            self.stop.wait(0.2)


# ---------------------------------------------------------------------------------------------
# load generators


def lua_script(out, name, body, headers):
    path = os.path.join(out, f"{name}.lua")
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(body)}"]
    for k, v in headers.items():
        lines.append(f'wrk.headers["{k}"] = "{v}"')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def parse_wrk(text):
    r = {"rps": 0.0, "requests": 0, "errors": 0}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"(\d+) requests in", text)
    if m:
        r["requests"] = int(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        r["errors"] += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        r["errors"] += sum(int(x) for x in m.groups())
    return r


def run_wrk(url, script, seconds):
    cmd = ["taskset", "-c", CPU_LOAD, "wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s",
           "--timeout", "5s", "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30)
    return parse_wrk(out.stdout + out.stderr)


def run_oha(url, body_file, headers, seconds, rate, timeout=None):
    """A fixed-rate run; with `timeout` (e.g. "1s") every request is bounded by it, and the
    requests it cut are counted in "cut" (they are among the errors too)."""
    cmd = ["taskset", "-c", CPU_LOAD, "oha", "-z", f"{seconds}s", "-q", str(rate),
           "-c", str(RATE_CONNECTIONS), "--latency-correction", "--no-tui",
           "--output-format", "json", "-m", "POST", "-D", body_file]
    if timeout:
        cmd += ["-t", timeout]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    cmd.append(url)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    try:
        j = json.loads(out.stdout)
    except json.JSONDecodeError:
        return {"p50": None, "p99": None, "p999": None, "errors": -1, "requests": 0, "cut": -1}
    lp = j.get("latencyPercentiles", {})
    codes = j.get("statusCodeDistribution", {})
    ok = sum(n for c, n in codes.items() if str(c).startswith("2"))
    bad = sum(n for c, n in codes.items() if not str(c).startswith("2"))
    # Requests still in flight when -z ends are reported as "aborted due to deadline": not errors.
    errs = j.get("errorDistribution", {})
    bad += sum(n for e, n in errs.items() if "deadline" not in e)
    cut = sum(n for e, n in errs.items() if "timeout" in e.lower() or "timed out" in e.lower())
    us = lambda s: None if s is None else s * 1e6  # noqa: E731
    return {"p50": us(lp.get("p50")), "p99": us(lp.get("p99")),
            "p999": us(lp.get("p99.9")), "errors": bad, "requests": ok + bad, "cut": cut}


def sse_once(host, port, path, body, headers):
    """One streaming call: (time to first event, times of every event), in seconds."""
    c = http.client.HTTPConnection(host, port, timeout=30)
    t0 = time.perf_counter()
    c.request("POST", path, body=body, headers=dict(headers, connection="close"))
    r = c.getresponse()
    times = []
    while True:
        # The response's own readline: chunked framing removed, b"" at the end of the body.
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data:"):
            times.append(time.perf_counter() - t0)
    c.close()
    return times


# ---------------------------------------------------------------------------------------------
# the fixed-reply nginx, the nginx proxy, the gateway's configs

REPLY = ('{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"r-1","role":"ROLE_AGENT",'
         '"parts":[{"text":"ok"}]}}}')


def card_json(origin, modes=("text/plain",)):
    """The fixed upstream's card; `modes` are the echo skill's input modes (the guard rows send a
    data part too, so their card takes `application/json` as well)."""
    return json.dumps({
        "name": "Bench Agent", "description": "Fixed-reply upstream of the benchmark.",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": f"{origin}/a2a/jsonrpc", "protocolBinding": "JSONRPC",
                                 "protocolVersion": "1.0"}],
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echo", "tags": ["echo"],
                    "inputModes": list(modes), "outputModes": ["text/plain"]}],
    })


def nginx_upstream_conf(out, port):
    card = os.path.join(out, "card.json")
    with open(card, "w") as f:
        f.write(card_json(f"http://127.0.0.1:{port}"))
    guard_card = os.path.join(out, "card-guard.json")
    with open(guard_card, "w") as f:
        f.write(card_json(f"http://127.0.0.1:{port}", ("text/plain", "application/json")))
    return f"""
worker_processes 1;
daemon off;
pid {out}/nginx-upstream.pid;
error_log {out}/nginx-upstream.err warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  client_body_temp_path {out}/nginx-tmp-up;
  proxy_temp_path {out}/nginx-tmp-up;
  fastcgi_temp_path {out}/nginx-tmp-up;
  uwsgi_temp_path {out}/nginx-tmp-up;
  scgi_temp_path {out}/nginx-tmp-up;
  client_max_body_size 1m;
  client_body_buffer_size 64k;
  server {{
    listen 127.0.0.1:{port} reuseport;
    location = /.well-known/agent-card.json {{ default_type application/json; alias {card}; }}
    location = {GUARD_CARD_PATH} {{ default_type application/json; alias {guard_card}; }}
    location = /nginx_status {{ stub_status; }}
    location / {{ default_type application/json; return 200 '{REPLY}'; }}
  }}
}}
"""


def nginx_proxy_conf(out, plain, logged, fixed, agent_port, agent_plain):
    return f"""
worker_processes 1;
daemon off;
pid {out}/nginx-proxy.pid;
error_log {out}/nginx-proxy.err warn;
events {{ worker_connections 4096; }}
http {{
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  client_body_temp_path {out}/nginx-tmp-px;
  proxy_temp_path {out}/nginx-tmp-px;
  fastcgi_temp_path {out}/nginx-tmp-px;
  uwsgi_temp_path {out}/nginx-tmp-px;
  scgi_temp_path {out}/nginx-tmp-px;
  client_max_body_size 1m;
  client_body_buffer_size 64k;
  upstream fixed {{ server 127.0.0.1:{fixed}; keepalive 64; keepalive_requests 10000000; }}
  upstream agent {{ server 127.0.0.1:{agent_port}; keepalive 64; keepalive_requests 10000000; }}
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_set_header A2A-Version 1.0;
  server {{
    listen 127.0.0.1:{plain};
    access_log off;
    location / {{ proxy_pass http://fixed; }}
  }}
  server {{
    listen 127.0.0.1:{logged};
    access_log {out}/nginx-access.log;
    location / {{ proxy_pass http://fixed; }}
  }}
  server {{
    listen 127.0.0.1:{agent_plain};
    access_log off;
    location / {{ proxy_pass http://agent; proxy_buffering off; }}
  }}
}}
"""


# Integrations the scenario gateways are configured with: the RSS target under load is stated
# for ten, so the three the scenarios use (`fixed`, `ref`, `refoff`) get seven idle ones beside.
GATEWAY_INTEGRATIONS = 10


def gateway_conf(out, name, fixed, agent, n_scale=None, total=GATEWAY_INTEGRATIONS,
                 fixed_card="/.well-known/agent-card.json", fixed_extra=""):
    """The gateway's config: `fixed` (the nginx upstream, tenant injected; its card at
    `fixed_card`, `fixed_extra` added to its table), `ref` (the reference agent) and `refoff` (the
    same agent, streaming off: streams are downgraded), then idle integrations `pad0`… on the
    nginx upstream up to `total`; or, with `n_scale`, integrations `s0`… only."""
    head = f"""[client]
allow_plain_http = true
[listen]
proxy = "127.0.0.1:0"
admin = "127.0.0.1:0"
[limits]
max_connections = 4096
max_inflight = 4096
"""
    fo = f"http://127.0.0.1:{fixed}"
    ints = []
    if n_scale is None:
        ints.append(("fixed", fo, 'tenant = "acme"\nskills = ["echo"]\n' + fixed_extra))
        ao = f"http://{agent}"
        ints.append(("ref", ao, 'skills = ["echo", "stream-report"]\n'))
        ints.append(("refoff", ao, 'skills = ["echo", "stream-report"]\nstreaming = "off"\n'))
        for i in range(max(total - len(ints), 0)):
            ints.append((f"pad{i}", fo, 'tenant = "acme"\nskills = ["echo"]\n'))
    else:
        for i in range(n_scale):
            ints.append((f"s{i}", fo, 'tenant = "acme"\nskills = ["echo"]\n'))
    body = head
    for n, origin, extra in ints:
        card = fixed_card if n == "fixed" else "/.well-known/agent-card.json"
        body += f"""
[[integrations]]
name = "{n}"
card = "{origin}{card}"
origins = ["{origin}"]
data_classes = ["internal"]
credential = {{ type = "none" }}
{extra}"""
    path = os.path.join(out, f"{name}.toml")
    with open(path, "w") as f:
        f.write(body)
    return path


def message_body(size, method="SendMessage", text=None):
    base = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": ""}]}}}
    fill = size - len(json.dumps(base, separators=(",", ":")))
    base["params"]["message"]["parts"][0]["text"] = text or ("echo " + "x" * max(fill - 5, 0))
    return json.dumps(base, separators=(",", ":"))


HEADERS = {"content-type": "application/json", "a2a-version": "1.0"}

# The content guard rows (issue 22): the fixed integration with every built-in detector on
# (`a2a_egress::guard::BUILTIN_NAMES`), action "record", beside the same integration without a
# guard. The body holds no finding (checked: the gateway's findings counter stays at 0), so the
# rows measure the scan itself, not a redaction or a refusal.
GUARD_DETECTORS = ["pci", "iban", "ssn", "email", "phone", "aws_key", "gcp_key", "github_token",
                   "slack_token", "stripe_key", "azure_key", "bearer_token", "private_key", "jwt",
                   "high_entropy"]
GUARD_TABLE = ("guard = { detectors = [" + ", ".join(f'"{d}"' for d in GUARD_DETECTORS)
               + '], action = "record" }\n')
# The card the guard rows' integration reads: its skill takes data parts (`application/json`).
GUARD_CARD_PATH = "/guard/agent-card.json"
GUARD_SIZES = (("1 KB", "1k", 1024), ("64 KB", "64k", 64 * 1024))

# Prose a planner might send: words, ids, amounts, dates, a UUID, a path, quoted titles, a
# few non-ASCII characters (sent as JSON escapes, as most serialisers write them); none is a
# finding, but the UUID and the path are token runs the scan must judge.
GUARD_PROSE = [
    "Please summarise the quarterly report for account 7731-A and compare it with the forecast "
    "in ticket 550e8400-e29b-41d4-a716-446655440000. ",
    "Revenue grew 12.5% to 1,204,330 EUR in the third quarter; the M\u00fcnchen and Z\u00fcrich "
    "offices closed 38 of 41 orders before 30 September. ",
    "See section 3.2 \"Outlook\" of reports/2026/q3/summary-final.pdf and table 7 for the "
    "regional split (north 41%, south 33%, west 26%). ",
    "The owner is the ops team at the Berlin office (room 4.12); escalate anything above "
    "250,000 \u20ac to the finance lead by Friday. ",
    "Flag every line item whose margin fell below 8 points, and list the five largest "
    "customers by order count with their change since last year. ",
]


def guard_rows_data(n):
    """`n` rows of the data part: a small sales table, strings and numbers."""
    regions = ("north", "south", "west", "east")
    return [{"region": regions[i % 4], "sku": f"SKU-{1000 + i}", "orders": 37 + i % 50,
             "revenue": round(1204.5 + 17.25 * i, 2), "margin": round(0.08 + (i % 7) / 100, 2),
             "note": "on plan" if i % 3 else "behind plan, see comment"} for i in range(n)]


def guard_body(size):
    """A JSON-RPC SendMessage of `size` bytes: a text part of prose and a data part (a table, about
    a fifth of the body), no finding."""
    rows = max(2, size // 5 // 130)
    msg = {"messageId": "m-1", "role": "ROLE_USER", "parts": [
        {"text": ""},
        {"data": {"report": "q3-sales", "currency": "EUR", "rows": guard_rows_data(rows)},
         "mediaType": "application/json"}]}
    base = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": msg}}
    fill = size - len(json.dumps(base, separators=(",", ":")))
    text, i = "", 0
    # Whole sentences while they fit (escapes counted as sent), then plain words to the byte.
    while True:
        s = GUARD_PROSE[i % len(GUARD_PROSE)]
        if len(json.dumps(text + s)) - 2 > fill:
            break
        text, i = text + s, i + 1
    text += ("lorem ipsum " * (size // 12 + 1))[: fill - (len(json.dumps(text)) - 2)]
    msg["parts"][0]["text"] = text
    body = json.dumps(base, separators=(",", ":"))
    assert len(body) == size, (len(body), size)
    return body


# ---------------------------------------------------------------------------------------------
# measurement


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Target:
    """One scenario: a URL on one proxy (or none: direct), a body, and how to count upstream
    connections."""

    def __init__(self, key, label, url, body, proc, upstream, group):
        self.key, self.label, self.url, self.body = key, label, url, body
        self.proc, self.upstream, self.group = proc, upstream, group
        self.sat, self.lat = [], []
        self.rss_idle = status_kb(proc, "VmRSS") if proc else None
        self.rss_peak = None


def measured(t, fn):
    """Runs `fn()` while counting the target process's CPU and its upstream's connections."""
    c0 = cpu_ticks(t.proc)
    if isinstance(t.upstream, Accepts):
        a0, r0 = t.upstream.read()
        watch = None
    else:
        watch = PortWatch(t.upstream)
        watch.start()
    res = fn()
    c1 = cpu_ticks(t.proc)
    if watch is None:
        a1, r1 = t.upstream.read()
        # The second status read is itself one connection and one request.
        res["up_conns"] = a1 - a0 - 1
        res["up_requests"] = r1 - r0 - 1
    else:
        watch.stop.set()
        watch.join()
        res["up_conns"] = len(watch.seen)
        res["up_requests"] = None
    n = max(res.get("requests", 0), 1)
    res["cpu_us"] = (c1 - c0) / CLK_TCK * 1e6 / n
    return res


def saturate(t, out, seconds):
    script = lua_script(out, t.key, t.body, HEADERS)
    return measured(t, lambda: run_wrk(t.url, script, seconds))


def fixed_rate(t, out, seconds, rate):
    path = os.path.join(out, f"{t.key}.body")
    with open(path, "w") as f:
        f.write(t.body)
    return measured(t, lambda: run_oha(t.url, path, HEADERS, seconds, rate))


# ---------------------------------------------------------------------------------------------
# report


def fmt(x, nd=0):
    if x is None:
        return "–"
    return f"{x:,.{nd}f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def summary(t):
    s = {
        "rps": median([r["rps"] for r in t.sat]),
        "cpu_us": median([r["cpu_us"] for r in t.sat]),
        "errors": sum(r["errors"] for r in t.sat + t.lat),
        "requests": sum(r["requests"] for r in t.sat + t.lat),
        "p50": median([r["p50"] for r in t.lat]),
        "p99": median([r["p99"] for r in t.lat]),
        "p999": median([r["p999"] for r in t.lat]),
        "lat_cpu_us": median([r["cpu_us"] for r in t.lat]),
        "up_conns": sum(r["up_conns"] for r in t.sat + t.lat),
        "rss_idle": t.rss_idle,
        "rss_peak": t.rss_peak,
    }
    ups = [r["up_requests"] for r in t.sat + t.lat if r["up_requests"] is not None]
    s["up_requests"] = sum(ups) if ups else None
    if s["up_requests"]:
        s["reuse"] = 100.0 * (1 - s["up_conns"] / s["up_requests"])
    else:
        s["reuse"] = None
    return s


def versions(bin_path, root):
    def cmd(argv):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    pingora = "?"
    try:
        lock = open(os.path.join(root, "Cargo.lock")).read()
        m = re.search(r'name = "pingora-core"\nversion = "([^"]+)"', lock)
        pingora = m.group(1) if m else "?"
    except OSError:
        pass
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "a2a-egress": cmd(["git", "-C", root, "describe", "--always", "--dirty"]),
        "rustc": cmd(["rustc", "--version"]),
        "pingora": pingora,
        "nginx": cmd(["nginx", "-v"]),
        "wrk": cmd(["wrk", "-v"]),
        "oha": cmd(["oha", "--version"]),
        "kernel": platform.release(),
        "cpu": f"{model}, {os.cpu_count()} CPUs",
        "mem": cmd(["sh", "-c", "free -m | sed -n 2p"]),
    }


def start_upstreams(procs, out, root, agent_bin):
    fixed = free_port()
    conf = os.path.join(out, "nginx-upstream.conf")
    os.makedirs(os.path.join(out, "nginx-tmp-up"), exist_ok=True)
    with open(conf, "w") as f:
        f.write(nginx_upstream_conf(out, fixed))
    procs.start("nginx-upstream", ["nginx", "-c", conf, "-p", out], CPU_LOAD)
    wait_port(fixed)
    # The reference agent, with the streamed report's parts 20 ms apart.
    reg = open(os.path.join(root, "config/agent/registry.toml")).read()
    reg = re.sub(r"(?m)^slow_step_ms = \d+", "slow_step_ms = 20", reg)
    reg_path = os.path.join(out, "registry.toml")
    with open(reg_path, "w") as f:
        f.write(reg)
    _, line = procs.start("agent", [agent_bin, "--registry", reg_path, "--listen",
                                    "127.0.0.1:0", "--watch-interval-ms", "0"],
                          CPU_LOAD, env={"RUST_LOG": "warn"}, first_line=True)
    return fixed, line["addr"]


def has_log_table(bin_path):
    """Whether this build reads `[log]` (access = "off") from its config."""
    r = subprocess.run([bin_path, "serve", "--help"], capture_output=True, text=True, timeout=10)
    return "--log-format" in r.stdout + r.stderr


def gateway_env(log, bin_path=None):
    """The environment of a gateway with its access log on or off. A build with `[log]` gets it
    from its config ([`with_log`]) and runs at its default level; an older one only had the level
    (the access line is at info: "warn" turns it off)."""
    if bin_path and has_log_table(bin_path):
        # An empty RUST_LOG is ignored: the config's level (default info) applies.
        return {"RUST_LOG": ""}
    level = "info,pingora_core=warn,pingora_proxy=warn" if log else "warn"
    return {"A2A_EGRESS_LOG": level, "RUST_LOG": level}


def with_log(config, bin_path, log):
    """`config`, or a copy of it with `[log] access = "off"` when the build reads `[log]`."""
    if log or not has_log_table(bin_path):
        return config
    off = config.replace(".toml", "-nolog.toml")
    with open(config) as f, open(off, "w") as g:
        g.write(f.read().replace("[listen]", '[log]\naccess = "off"\n[listen]', 1))
    return off


def with_runtime(config, work_stealing):
    """`config`, or a copy of it with `[runtime] work_stealing = false`."""
    if work_stealing:
        return config
    off = config.replace(".toml", "-nosteal.toml")
    with open(config) as f, open(off, "w") as g:
        g.write(f.read().replace("[listen]", "[runtime]\nwork_stealing = false\n[listen]", 1))
    return off


class OtlpSink:
    """A local OTLP/HTTP receiver for the traces rows: answers every `POST /v1/traces` 200 with
    an empty ExportTraceServiceResponse (an empty protobuf message is zero bytes), counting
    requests and bytes; it does not decode them (its CPU is the bench's, not the gateway's)."""

    def __init__(self):
        import http.server

        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                self.rfile.read(n)
                with sink.lock:
                    sink.requests += 1
                    sink.bytes += n
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.lock = threading.Lock()
        self.requests = self.bytes = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def read(self):
        with self.lock:
            return self.requests, self.bytes


def with_telemetry(config, endpoint):
    """A copy of `config` with `[telemetry]` on: every call traced (sampling 1.0, or
    `BENCH_OTEL_SAMPLING` to split the cost: at 0.0 only the trace context is made and sent),
    exported by OTLP/HTTP to `endpoint`."""
    on = config.replace(".toml", "-otel.toml")
    sampling = float(os.environ.get("BENCH_OTEL_SAMPLING", "1.0"))
    table = (f'[telemetry]\notlp_endpoint = "{endpoint}"\nprotocol = "http"\n'
             f'sampling = {sampling}\nservice_name = "a2a-egress-bench"\n')
    with open(config) as f, open(on, "w") as g:
        g.write(f.read().replace("[listen]", table + "[listen]", 1))
    return on


# The traced gateway's batch queue: large enough that no span is dropped at saturation, so the
# row measures every span's full cost (the default, 2048, drops the excess instead).
OTEL_ENV = {"OTEL_BSP_MAX_QUEUE_SIZE": "65536", "OTEL_BSP_SCHEDULE_DELAY": "1000"}


def start_gateway(procs, name, bin_path, config, log, threads=None, work_stealing=True,
                  extra_env=None):
    config = with_runtime(with_log(config, bin_path, log), work_stealing)
    env = gateway_env(log, bin_path)
    env.update(extra_env or {})
    if threads:
        env["TOKIO_WORKER_THREADS"] = str(threads)
    p, line = procs.start(name, [bin_path, "serve", "--config", config], CPU_PROXY, env=env,
                          first_line=True)
    wait_ready(line["admin"])
    return p, line


def get_task_body(agent):
    """A task the reference agent holds, and the GetTask body reading it."""
    host, port = agent.split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request("POST", "/a2a/jsonrpc", body=message_body(200), headers=HEADERS)
    r = json.loads(c.getresponse().read())
    task = r["result"].get("task", {})
    return json.dumps({"jsonrpc": "2.0", "id": 2, "method": "GetTask",
                       "params": {"id": task.get("id", "missing")}})


def sse_targets(procs, agent, nginx_agent, bare_agent, gw):
    body = message_body(0, method="SendStreamingMessage", text="stream a report in 10 parts")
    hdrs = dict(HEADERS, accept="text/event-stream")
    return [
        ("direct", agent, "/a2a/jsonrpc"),
        ("nginx", f"127.0.0.1:{nginx_agent}", "/a2a/jsonrpc"),
        ("bare pingora", f"127.0.0.1:{bare_agent}", "/a2a/jsonrpc"),
        ("a2a-egress", gw, "/agents/ref"),
    ], body, hdrs


# Issue 20's SSE row: a stream through the 0.3 translation. The official Python a2a-sdk 0.3.26
# agent (tests/peers/sdk_agent_v03.py, in the .venv03 that scripts/test.sh makes) answers a
# `task …` stream with four events; it is read direct (0.3 `message/stream`) and through a
# gateway of its own (1.0 SendStreamingMessage, translated both ways), alternating.
V03_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv03", "bin", "python")
V03_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "peers",
                         "sdk_agent_v03.py")


def sse_v03(procs, out, bin_path, rounds):
    """Time to first event, direct to the 0.3 agent and through a2a-egress (rows of the SSE
    table); {} when the 0.3 venv is missing (say so)."""
    if not os.path.exists(V03_PYTHON):
        print(f"    (no {V03_PYTHON}: run scripts/test.sh once; the 0.3 SSE rows are skipped)",
              flush=True)
        return {}
    _, line = procs.start("agent-v03", [V03_PYTHON, V03_AGENT], CPU_LOAD, first_line=True)
    card = line["card_url"]
    origin = card.split("/.well-known")[0]
    cfg = os.path.join(out, "gateway-v03.toml")
    with open(cfg, "w") as f:
        f.write(f"""[client]
allow_plain_http = true
versions = ["1.0", "0.3"]
[listen]
proxy = "127.0.0.1:0"
admin = "127.0.0.1:0"

[[integrations]]
name = "v03"
card = "{card}"
origins = ["{origin}"]
data_classes = ["internal"]
credential = {{ type = "none" }}
skills = ["echo"]
""")
    _, gline = start_gateway(procs, "gateway-v03", bin_path, cfg, log=True)
    direct = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {
        "message": {"kind": "message", "messageId": "m-1", "role": "user",
                    "parts": [{"kind": "text", "text": "task stream"}]}}})
    through = message_body(0, method="SendStreamingMessage", text="task stream")
    hdrs = dict(HEADERS, accept="text/event-stream")
    hdrs03 = {"content-type": "application/json", "accept": "text/event-stream"}
    targets = [("direct (0.3 agent)", line["addr"], "/jsonrpc", direct, hdrs03),
               ("a2a-egress → 0.3 agent", gline["proxy"], "/agents/v03", through, hdrs)]
    rows = {}
    for name, addr, path, body, h in targets:
        host, port = addr.split(":")
        sse_once(host, int(port), path, body, h)  # warm-up: connection set-up, first compile
    runs = {name: [] for name, *_ in targets}
    for _ in range(rounds):
        for name, addr, path, body, h in targets:
            host, port = addr.split(":")
            runs[name].append(sse_once(host, int(port), path, body, h))
    for name, got in runs.items():
        rows[name] = {"ttfe_ms": median([r[0] * 1e3 if r else None for r in got]),
                      "events": median([len(r) for r in got]),
                      "span_ms": median([(r[-1] - r[0]) * 1e3 if len(r) > 1 else None for r in got]),
                      "gaps": [round((b - a) * 1e3, 1) for a, b in zip(got[-1], got[-1][1:])]
                      if got and got[-1] else []}
    return rows


def run_sse(targets, body, hdrs, rounds):
    res = {name: [] for name, _, _ in targets}
    for _ in range(rounds):
        for name, addr, path in targets:
            host, port = addr.split(":")
            res[name].append(sse_once(host, int(port), path, body, hdrs))
    rows = {}
    for name, runs in res.items():
        ttfe = median([r[0] * 1e3 if r else None for r in runs])
        n = median([len(r) for r in runs])
        span = median([(r[-1] - r[0]) * 1e3 if len(r) > 1 else None for r in runs])
        rows[name] = {"ttfe_ms": ttfe, "events": n, "span_ms": span,
                      "gaps": [round((b - a) * 1e3, 1) for a, b in zip(runs[-1], runs[-1][1:])]
                      if runs and runs[-1] else []}
    return rows


def scale(procs, out, bin_path, fixed, seconds, sizes):
    rows = []
    for n in sizes:
        cfg = gateway_conf(out, f"scale-{n}", fixed, None, n_scale=n)
        t0 = time.time()
        p, line = procs.start(f"gw-scale-{n}", [bin_path, "serve", "--config", cfg], CPU_PROXY,
                              env=gateway_env(True, bin_path), first_line=True)
        admin = line["admin"]
        wait_ready(admin, timeout=300)
        startup = time.time() - t0
        time.sleep(1)
        idle = status_kb(p, "VmRSS")
        # Reload: the same file with one integration more, then SIGHUP.
        cfg2 = gateway_conf(out, f"scale-{n}-plus", fixed, None, n_scale=n + 1)
        shutil.copy(cfg2, cfg)
        t1 = time.time()
        p.send_signal(signal.SIGHUP)
        wait_ready(admin, timeout=300,
                   want=lambda d: d.get("integrations", {}).get(f"s{n}", {}).get("status")
                   == "usable")
        reload_s = time.time() - t1
        t = Target(f"scale{n}", f"{n}", f"http://{line['proxy']}/agents/s{n - 1}",
                   message_body(1024), p, Accepts(fixed), "scale")
        t.sat.append(saturate(t, out, seconds))
        rows.append({"n": n, "startup_s": startup, "idle_kb": idle, "reload_s": reload_s,
                     "rps": t.sat[0]["rps"], "cpu_us": t.sat[0]["cpu_us"],
                     "errors": t.sat[0]["errors"], "peak_kb": status_kb(p, "VmHWM")})
        procs.stop(p)
    return rows


def callgrind_gateway(procs, name, vg, bin_path, cfg, log):
    """A gateway started under `vg` (the valgrind command), once its `fixed` integration is usable."""
    p, line = procs.start(name, ["env"] + vg + [bin_path, "serve", "--config", cfg],
                          CPU_PROXY, env=gateway_env(log, bin_path), first_line=True)
    wait_ready(line["admin"], timeout=300,
               want=lambda d: d.get("integrations", {}).get("fixed", {}).get("status") == "usable")
    return p, line


def instructions_per_request(procs, out, kind, argv, url, body, n, attempts=3, settle=0.0):
    """User-space instructions per request of one proxy under callgrind (noise-free on a shared
    machine): instrumentation is switched on after a warm-up, `n` requests are sent by oha, and
    the dumped total is divided by the requests answered 200. A run whose switch-on did not take,
    whose load failed, or whose count is implausibly small (a dump of an idle process) is run
    again from a fresh process, at most `attempts` times. `settle` seconds pass after the warm-up
    and after the measured load, inside the count: a traced gateway's batch exporter sends what
    the warm-up queued before the count starts and what the measured calls queued before it ends."""
    for attempt in range(attempts):
        got = _instructions_once(procs, out, f"{kind}-{attempt}", argv, url, body, n, settle)
        if got is not None:
            return got
        print(f"    callgrind run {kind} #{attempt + 1} gave no usable count; again", flush=True)
    return None


def _instructions_once(procs, out, kind, argv, url, body, n, settle=0.0):
    cg_out = os.path.join(out, f"callgrind-{kind}")
    shutil.rmtree(cg_out, ignore_errors=True)
    os.makedirs(cg_out, exist_ok=True)
    vg = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
          f"--callgrind-out-file={cg_out}/callgrind.out.%p"]
    p, line = argv(vg)
    bf = os.path.join(cg_out, "body.json")
    with open(bf, "w") as f:
        f.write(body)
    target = url(line)

    def load(count):
        r = subprocess.run(["taskset", "-c", CPU_LOAD, "oha", "-n", str(count), "-c", "4",
                            "--no-tui", "--output-format", "json", "-m", "POST", "-D", bf,
                            "-H", "content-type: application/json", "-H", "a2a-version: 1.0",
                            target], capture_output=True, text=True, timeout=600)
        try:
            return int(json.loads(r.stdout).get("statusCodeDistribution", {}).get("200", 0))
        except (ValueError, AttributeError):
            return 0

    def control(flag):
        return subprocess.run(["callgrind_control", flag[0], *flag[1:], str(p.pid)],
                              capture_output=True, timeout=60).returncode == 0
    load(200)
    time.sleep(settle)
    switched = control(["-i", "on"])
    answered = load(n)
    time.sleep(settle)
    switched = control(["-i", "off"]) and switched
    dumped = control(["-d"])
    procs.stop(p, timeout=60)
    total = 0
    for name in os.listdir(cg_out):
        if name.startswith("callgrind.out."):
            for ln in open(os.path.join(cg_out, name), errors="replace"):
                if ln.startswith("totals:") or ln.startswith("summary:"):
                    total = max(total, int(ln.split()[1]))
    # A proxy cannot answer an HTTP request in fewer than a few thousand instructions.
    if not (switched and dumped and answered >= n * 0.99 and total >= answered * 1000):
        return None
    return total / answered


def instructions(procs, out, bin_path, bare_path, fixed, n, alt=None):
    """Instructions per 1 KB SendMessage: bare pingora, a2a-egress with its access log on and off,
    and, given `alt` (label, binary), that other build with its access log on."""
    body = message_body(1024)
    rows = {}
    port = free_port()

    def bare(vg):
        return procs.start("cg-bare", ["env"] + vg + [bare_path, f"127.0.0.1:{port}",
                                                      f"127.0.0.1:{fixed}"], CPU_PROXY,
                           first_line=True)
    rows["bare pingora"] = instructions_per_request(
        procs, out, "bare", bare, lambda _: f"http://127.0.0.1:{port}/a2a/jsonrpc", body, n)
    runs = [("a2a-egress", bin_path, True), ("a2a-egress", bin_path, False)]
    if alt:
        runs.append((f"a2a-egress, {alt[0]}", alt[1], True))
    for i, (name, bin_path, log) in enumerate(runs):
        cfg = with_log(gateway_conf(out, "gateway-cg", fixed, "127.0.0.1:9", total=3), bin_path, log)

        def gw(vg, cfg=cfg, log=log, bin_path=bin_path, i=i):
            return callgrind_gateway(procs, f"cg-gw-{i}-{log}", vg, bin_path, cfg, log)
        key = f"{name}, access log " + ("on" if log else "off")
        # The first two keep the directory names bench.sh --instructions points people at.
        rows[key] = instructions_per_request(
            procs, out, f"gw-{log}" if i < 2 else f"gw-{i}-{log}", gw,
            lambda line: f"http://{line['proxy']}/agents/fixed", body, n)
    return rows


# The traced gateway under callgrind: a batch delay of 1 s (`BENCH_OTEL_DELAY_MS`; the SDK's
# default is 5 s), so every span of the measured calls is exported (and its export counted) within
# the settle time; a queue no span overflows. Under callgrind a call is slow, so batches are
# smaller than at full speed and each export's fixed cost weighs more: a conservative figure.
OTEL_CG_DELAY_MS = int(os.environ.get("BENCH_OTEL_DELAY_MS", "1000"))
OTEL_CG_ENV = {"OTEL_BSP_MAX_QUEUE_SIZE": "65536", "OTEL_BSP_SCHEDULE_DELAY": str(OTEL_CG_DELAY_MS)}
OTEL_CG_SETTLE = OTEL_CG_DELAY_MS / 1000 + 3.0


def telemetry_instructions(procs, out, bin_path, fixed, n, sink):
    """Instructions per 1 KB SendMessage of the gateway (access log on) with `[telemetry]` off and
    on (sampling 1.0, OTLP/HTTP to `sink`, which accepts and discards): every thread of the
    process is counted, the batch processor's and the exporter's included. Answers the rows and
    the OTLP requests and bytes the sink got during the traced run."""
    body = message_body(1024)
    rows, got = {}, None
    base = with_log(gateway_conf(out, "gateway-cgt", fixed, "127.0.0.1:9", total=3), bin_path, True)
    for traced in (False, True):
        cfg = with_telemetry(base, sink.url) if traced else base
        env = gateway_env(True, bin_path)
        if traced:
            env.update(OTEL_CG_ENV)

        def gw(vg, cfg=cfg, env=env, traced=traced):
            p, line = procs.start(f"cgt-gw-{traced}", ["env"] + vg + [bin_path, "serve", "--config", cfg],
                                  CPU_PROXY, env=env, first_line=True)
            wait_ready(line["admin"], timeout=300,
                       want=lambda d: d.get("integrations", {}).get("fixed", {}).get("status")
                       == "usable")
            return p, line
        before = sink.read()
        rows["traces " + ("on" if traced else "off")] = instructions_per_request(
            procs, out, f"otel-{traced}", gw, lambda line: f"http://{line['proxy']}/agents/fixed",
            body, n, settle=OTEL_CG_SETTLE)
        if traced:
            after = sink.read()
            got = (after[0] - before[0], after[1] - before[1])
    return rows, got


def print_telemetry_instructions(args):
    """`--instructions-only --telemetry-only`: the traces row in instructions per request."""
    os.makedirs(args.out, exist_ok=True)
    procs = Procs(args.out)
    sink = OtlpSink()
    n = 500 if args.quick else 1000
    try:
        fixed, _agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        rows, got = telemetry_instructions(procs, args.out, args.bin, fixed, n, sink)
    finally:
        procs.stop_all()
    off, on = rows.get("traces off"), rows.get("traces on")
    for name, v in rows.items():
        print(f"a2a-egress, access log on, {name:10} {v:>12,.0f} instructions/request" if v
              else f"{name} -")
    if on and off:
        sampling = os.environ.get("BENCH_OTEL_SAMPLING", "1.0")
        print(f"traces on / off: {on / off:.3f}x (target <= 1.10x; {n} calls, sampling {sampling}, "
              f"OTLP/HTTP exports received over all traced runs: {got[0]:,}, {got[1] / 1e6:.2f} MB)")


def criterion_rows(target_dir):
    """Mean times of the criterion benches `scripts/bench.sh` ran, from their estimates."""
    base = os.path.join(target_dir, "criterion")
    rows = []
    if not os.path.isdir(base):
        return rows
    for dirpath, _, files in os.walk(base):
        if "estimates.json" in files and dirpath.endswith(os.sep + "new"):
            name = os.path.relpath(os.path.dirname(dirpath), base)
            try:
                est = json.load(open(os.path.join(dirpath, "estimates.json")))
                rows.append((name, est["mean"]["point_estimate"] / 1e3))
            except (OSError, KeyError, ValueError):
                pass
    return sorted(rows)


def build_targets(procs, out, bin_path, gws, ports):
    fixed, agent = ports["fixed"], ports["agent"]
    up, ag = Accepts(fixed), int(agent.split(":")[1])
    nx, bare_f, bare_a = ports["nginx"], ports["bare_fixed"], ports["bare_agent"]
    gw, gw_nolog = gws
    b1, b10 = message_body(1024), message_body(10 * 1024)
    gt = get_task_body(agent)
    echo = message_body(200)
    stream_echo = message_body(200, method="SendStreamingMessage")
    P = ports["procs"]
    T = []
    for label, body, group in (("1 KB", b1, "send1k"), ("10 KB", b10, "send10k")):
        T.append(Target(f"direct-{group}", "direct (nginx upstream)",
                        f"http://127.0.0.1:{fixed}/a2a/jsonrpc", body, P["nginx-upstream"], up, group))
        T.append(Target(f"nginx-{group}", "nginx proxy, no access log",
                        f"http://127.0.0.1:{nx[0]}/a2a/jsonrpc", body, P["nginx-proxy"], up, group))
        if group == "send1k":
            T.append(Target(f"nginxlog-{group}", "nginx proxy, access log",
                            f"http://127.0.0.1:{nx[1]}/a2a/jsonrpc", body, P["nginx-proxy"], up, group))
        T.append(Target(f"bare-{group}", "bare pingora, header only",
                        f"http://127.0.0.1:{bare_f}/a2a/jsonrpc", body, P["bare-fixed"], up, group))
        T.append(Target(f"gw-{group}", "a2a-egress, access log on",
                        f"http://{gw[1]['proxy']}/agents/fixed", body, gw[0], up, group))
        if group == "send1k":
            T.append(Target(f"gwnolog-{group}", "a2a-egress, access log off",
                            f"http://{gw_nolog[1]['proxy']}/agents/fixed", body, gw_nolog[0], up, group))
            gw2, gw4 = ports["gw2"], ports["gw4"]
            T.append(Target(f"gw2thread-{group}", "a2a-egress, 2 worker threads (default: its CPUs, 1 here)",
                            f"http://{gw2[1]['proxy']}/agents/fixed", body, gw2[0], up, group))
            T.append(Target(f"gw4thread-{group}", "a2a-egress, 4 worker threads (default: its CPUs, 1 here)",
                            f"http://{gw4[1]['proxy']}/agents/fixed", body, gw4[0], up, group))
            gwns = ports["gwns"]
            T.append(Target(f"gwnosteal-{group}", "a2a-egress, no work stealing (default threads)",
                            f"http://{gwns[1]['proxy']}/agents/fixed", body, gwns[0], up, group))
            gwotel = ports.get("gwotel")
            if gwotel:
                T.append(Target(f"gwotel-{group}", "a2a-egress, access log on, traces on (100% sampled, OTLP/HTTP)",
                                f"http://{gwotel[1]['proxy']}/agents/fixed", body, gwotel[0], up,
                                group))
            gwalt = ports["gwalt"]
            if gwalt:
                T.append(Target(f"gwalt-{group}", f"a2a-egress, {ports['alt_label']}",
                                f"http://{gwalt[1]['proxy']}/agents/fixed", body, gwalt[0], up,
                                group))
    g = "gettask"
    T.append(Target(f"direct-{g}", "direct (reference agent)", f"http://{agent}/a2a/jsonrpc", gt,
                    P["agent"], ag, g))
    T.append(Target(f"nginx-{g}", "nginx proxy, no access log",
                    f"http://127.0.0.1:{nx[2]}/a2a/jsonrpc", gt, P["nginx-proxy"], ag, g))
    T.append(Target(f"bare-{g}", "bare pingora, header only",
                    f"http://127.0.0.1:{bare_a}/a2a/jsonrpc", gt, P["bare-agent"], ag, g))
    T.append(Target(f"gw-{g}", "a2a-egress, access log on", f"http://{gw[1]['proxy']}/agents/ref",
                    gt, gw[0], ag, g))
    g = "downgrade"
    T.append(Target(f"direct-{g}", "direct SendMessage (reference agent)",
                    f"http://{agent}/a2a/jsonrpc", echo, P["agent"], ag, g))
    T.append(Target(f"gwsend-{g}", "a2a-egress SendMessage",
                    f"http://{gw[1]['proxy']}/agents/ref", echo, gw[0], ag, g))
    T.append(Target(f"gw-{g}", "a2a-egress SendStreamingMessage → SendMessage (downgrade)",
                    f"http://{gw[1]['proxy']}/agents/refoff", stream_echo, gw[0], ag, g))
    return T


GROUPS = [
    ("send1k", "JSON-RPC SendMessage, 1 KB, fixed-reply nginx upstream (tenant injected by a2a-egress)"),
    ("send10k", "JSON-RPC SendMessage, 10 KB, fixed-reply nginx upstream (tenant injected by a2a-egress)"),
    ("gettask", "JSON-RPC GetTask, reference agent upstream"),
    ("downgrade", "downgrade path, reference agent upstream"),
]


def run_load(targets, out, args):
    print(f"==> saturation: {args.rounds} interleaved rounds of {args.seconds} s per scenario",
          flush=True)
    for r in range(args.rounds):
        for t in targets:
            t.sat.append(saturate(t, out, args.seconds))
            print(f"    round {r + 1} {t.key}: {t.sat[-1]['rps']:,.0f} req/s, "
                  f"{t.sat[-1]['cpu_us']:.1f} µs/req", flush=True)
    rates = {}
    for group, _ in GROUPS:
        proxies = [t for t in targets if t.group == group and not t.key.startswith("direct")]
        slowest = min(median([r["rps"] for r in t.sat]) or 1 for t in proxies)
        rates[group] = max(int(slowest / 2), 1)
    print(f"==> fixed rate (half the slowest proxy's saturation): {rates}", flush=True)
    for r in range(args.lat_rounds):
        for t in targets:
            t.lat.append(fixed_rate(t, out, args.lat_seconds, rates[t.group]))
            print(f"    round {r + 1} {t.key}: p50 {fmt(t.lat[-1]['p50'])} µs, "
                  f"p99 {fmt(t.lat[-1]['p99'])} µs", flush=True)
    return rates


def write_results(path, ctx):
    t_by = {t.key: t for t in ctx["targets"]}
    S = {k: summary(t) for k, t in t_by.items()}
    L = []
    w = L.append
    w("# Benchmark results")
    w("")
    w(f"Written by `scripts/bench.sh{' --quick' if ctx['quick'] else ''}` on {ctx['date']} "
      f"(took {ctx['took']:.0f} s). Raw logs: `{ctx['out']}`.")
    w("")
    w("| | |")
    w("|---|---|")
    for k, v in ctx["versions"].items():
        w(f"| {k} | {v} |")
    w(f"| load average at start / end | {ctx['load_start']} / {ctx['load_end']} |")
    w("")
    w("Method: loopback only; every proxy under test pinned to CPU 0, the load generators and "
      "upstreams to CPU 1 (`taskset`). Saturation: `wrk -t1 -c32`, "
      f"{ctx['rounds']} interleaved rounds of {ctx['seconds']} s, median shown. Latency: `oha "
      f"--latency-correction` (coordinated omission corrected) with 16 connections at half the "
      f"slowest proxy's saturation of each group, {ctx['lat_rounds']} rounds of {ctx['lat_seconds']} s, "
      "median of the rounds' percentiles. CPU µs/req: utime+stime of the target process(es) from "
      "/proc over the saturation runs, divided by requests (for direct: the upstream's own). "
      "Upstream connections: accepts counted by the nginx upstream (stub_status), or distinct "
      "connections seen by `ss` every 200 ms for the reference agent. RSS: VmRSS before any "
      "load → VmHWM (peak) at the end; nginx figures add master and worker; every a2a-egress "
      f"scenario gateway is configured with {GATEWAY_INTEGRATIONS} integrations (the three the "
      "scenarios call and idle ones on the nginx upstream). The machine may be "
      "shared: compare ratios within this run, not absolute figures across runs.")
    w("")
    for group, title in GROUPS:
        ts = [t for t in ctx["targets"] if t.group == group]
        if not ts:
            continue
        direct = S.get(f"direct-{group}")
        nginx = S.get(f"nginx-{group}")
        bare = S.get(f"bare-{group}")
        w(f"## {title}")
        w("")
        w(f"Fixed rate: {ctx['rates'][group]:,} req/s.")
        w("")
        w("| target | sat. req/s | × nginx | CPU µs/req | × bare pingora | p50 µs | p99 µs | "
          "p99.9 µs | +p50 over direct | +p99 over direct | errors | upstream conns (reuse) | "
          "RSS idle → peak MB |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for t in ts:
            s = S[t.key]
            add50 = s["p50"] - direct["p50"] if direct and s["p50"] and direct["p50"] else None
            add99 = s["p99"] - direct["p99"] if direct and s["p99"] and direct["p99"] else None
            reuse = f" ({s['reuse']:.3f}%)" if s["reuse"] is not None else " (seen)"
            rss = (f"{s['rss_idle'] / 1024:.1f} → {s['rss_peak'] / 1024:.1f}"
                   if s["rss_idle"] else "–")
            w(f"| {t.label} | {fmt(s['rps'])} | {ratio(s['rps'], nginx and nginx['rps'])} | "
              f"{fmt(s['cpu_us'], 1)} | {ratio(s['cpu_us'], bare and bare['cpu_us'])} | "
              f"{fmt(s['p50'])} | {fmt(s['p99'])} | {fmt(s['p999'])} | "
              f"{'' if t.key.startswith('direct') else fmt(add50)} | "
              f"{'' if t.key.startswith('direct') else fmt(add99)} | {s['errors']} | "
              f"{s['up_conns']}{reuse} | {rss} |")
        w("")
    w("## SSE pass-through (reference agent, 10 parts 20 ms apart; the 0.3 rows: the official "
      "Python a2a-sdk 0.3.26 agent, 4 events, translated both ways)")
    w("")
    w("| target | time to first event ms | events | first → last event ms | gaps of the last run ms |")
    w("|---|---|---|---|---|")
    for name, r in ctx["sse"].items():
        w(f"| {name} | {fmt(r['ttfe_ms'], 2)} | {fmt(r['events'])} | {fmt(r['span_ms'], 1)} | "
          f"{' '.join(str(g) for g in r['gaps'])} |")
    w("")
    if ctx.get("instructions"):
        ins = ctx["instructions"]
        base = ins.get("bare pingora")
        w("## Instructions per request (callgrind, user space; 1 KB SendMessage, tenant injected)")
        w("")
        w("Counted by valgrind, so unaffected by the machine's load: the noise-free ratio.")
        w("")
        w("| target | instructions/request | × bare pingora |")
        w("|---|---|---|")
        for name, n in ins.items():
            w(f"| {name} | {fmt(n)} | {ratio(n, base)} |")
        w("")
    if ctx.get("guard"):
        write_guard(w, ctx["guard"], ctx)
    w("## Scale: integrations configured (all on the fixed-reply nginx; requests to the last one)")
    w("")
    w("| integrations | start-up to ready s | idle RSS MB | reload (+1 integration) s | "
      "sat. req/s | CPU µs/req | errors | peak RSS MB |")
    w("|---|---|---|---|---|---|---|---|")
    for r in ctx["scale"]:
        w(f"| {r['n']:,} | {r['startup_s']:.2f} | {r['idle_kb'] / 1024:.1f} | {r['reload_s']:.2f} | "
          f"{fmt(r['rps'])} | {fmt(r['cpu_us'], 1)} | {r['errors']} | {r['peak_kb'] / 1024:.1f} |")
    w("")
    constrained.write(w, ctx)
    w("## Targets")
    w("")
    w("| target | goal | measured | met |")
    w("|---|---|---|---|")
    for goal, want, got, ok in targets_table(S, ctx):
        w(f"| {goal} | {want} | {got} | {'yes' if ok else 'no' if ok is not None else '–'} |")
    w("")
    if ctx["criterion"]:
        w("## Micro-benchmarks (criterion, mean)")
        w("")
        w("| bench | µs |")
        w("|---|---|")
        for name, us in ctx["criterion"]:
            w(f"| {name} | {us:.3f} |")
        w("")
    w("## Raw figures (every run)")
    w("")
    w("| scenario | kind | req/s | requests | errors | CPU µs/req | p50 | p99 | p99.9 | up conns | up requests |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for t in ctx["targets"]:
        for kind, runs in (("sat", t.sat), ("rate", t.lat)):
            for r in runs:
                w(f"| {t.key} | {kind} | {fmt(r.get('rps'))} | {r['requests']} | {r['errors']} | "
                  f"{r['cpu_us']:.1f} | {fmt(r.get('p50'))} | {fmt(r.get('p99'))} | "
                  f"{fmt(r.get('p999'))} | {r['up_conns']} | {r['up_requests']} |")
    for key, runs in ((ctx.get("guard") or {}).get("runs") or {}).items():
        for r in runs:
            w(f"| {key} | sat | {fmt(r.get('rps'))} | {r['requests']} | {r['errors']} | "
              f"{r['cpu_us']:.1f} | – | – | – | {r['up_conns']} | {r['up_requests']} |")
    w("")
    w("Threads: " + ", ".join(f"{k} {v}" for k, v in ctx["threads"].items()) + ".")
    w("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def write_guard(w, g, ctx):
    """The content guard section: CPU (and instructions) per request, guard off and on, per size;
    the matcher's criterion figures in MB/s."""
    S, ins = g["S"], g.get("instructions") or {}
    w("## Content guard: every built-in detector on vs off (SendMessage, text and data parts, no finding)")
    w("")
    w("The same binary and config but for the `fixed` integration's `guard = { detectors = [every "
      "built-in], action = \"record\" }` (its card takes `application/json`, for the data part); "
      "the body is prose with ids, amounts, a UUID, a path and a few non-ASCII characters (as JSON "
      "escapes) plus a data part of a sales table, about a fifth of the body, and holds no finding: "
      f"the guard-on gateway counted {g['findings']:.0f} findings. Share: on minus off, the "
      "scan's own cost; linear in body size when the 64 KB share is at most 64× the 1 KB share. "
      f"Saturation as above ({ctx['rounds']} interleaved rounds of {ctx['seconds']} s, median); "
      "instructions: callgrind, every thread, access log on.")
    w("")
    w("| body | guard off CPU µs/req | guard on CPU µs/req | on / off | share µs | "
      "guard off instr./req | guard on instr./req | on / off | share instr. | errors |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for label, key, _ in GUARD_SIZES:
        off, on = S.get(f"guardoff-{key}") or {}, S.get(f"guardon-{key}") or {}
        c0, c1 = off.get("cpu_us"), on.get("cpu_us")
        i0, i1 = ins.get(f"guardoff-{key}"), ins.get(f"guardon-{key}")
        w(f"| {label} | {fmt(c0, 1)} | {fmt(c1, 1)} | {ratio(c1, c0)} | "
          f"{fmt(c1 - c0 if c0 and c1 else None, 1)} | {fmt(i0)} | {fmt(i1)} | {ratio(i1, i0)} | "
          f"{fmt(i1 - i0 if i0 and i1 else None)} | "
          f"{off.get('errors', 0) + on.get('errors', 0)} |")
    w("")
    mrows = guard_matcher_rows(dict(ctx.get("criterion") or []), ctx.get("criterion_bytes") or {})
    if mrows:
        w("`benches/guard.rs` (criterion, mean): the matcher alone over the text, a plain "
          "`memchr` pass over the same bytes, and the whole request scan (walk, normalisation, "
          "matching, verdict) of a SendMessage of that size.")
        w("")
        w("| size | matcher MB/s | memchr MB/s | scan_request MB/s |")
        w("|---|---|---|---|")
        for label, mbs in mrows:
            w(f"| {label} | {fmt(mbs.get('matcher'))} | {fmt(mbs.get('memchr'))} | "
              f"{fmt(mbs.get('scan_request'))} |")
        w("")


def targets_table(S, ctx):
    rows = []
    gw, bare, nginx, d = S.get("gw-send1k"), S.get("bare-send1k"), S.get("nginx-send1k"), \
        S.get("direct-send1k")
    if gw and bare and bare["cpu_us"]:
        r = gw["cpu_us"] / bare["cpu_us"]
        rows.append(("full-path CPU/req vs bare pingora (1 KB)", "≤ 1.10×", f"{r:.2f}×", r <= 1.10))
        nl = S.get("gwnolog-send1k")
        if nl and nl["cpu_us"]:
            r2 = nl["cpu_us"] / bare["cpu_us"]
            rows.append(("… with the access log off", "≤ 1.10×", f"{r2:.2f}×", r2 <= 1.10))
    rows += telemetry_rows(S, ctx)
    if ctx.get("guard"):
        rows += guard_rows(ctx["guard"])
    ins = ctx.get("instructions") or {}
    if ins.get("bare pingora") and ins.get("a2a-egress, access log on"):
        r = ins["a2a-egress, access log on"] / ins["bare pingora"]
        rows.append(("full-path instructions/req vs bare pingora (callgrind)", "≤ 1.10×",
                     f"{r:.2f}×", r <= 1.10))
    if gw and nginx and nginx["rps"]:
        r = gw["rps"] / nginx["rps"]
        rows.append(("throughput vs nginx without access log (1 KB)", "≥ 0.5× (stretch 0.6×)",
                     f"{r:.2f}×", r >= 0.5))
    if gw and bare and d and gw["p50"] and bare["p50"] and d["p50"]:
        a, b = gw["p50"] - d["p50"], bare["p50"] - d["p50"]
        rows.append(("added p50 over direct", "≤ bare's + 50 µs", f"{a:.0f} µs (bare {b:.0f} µs)",
                     a <= b + 50))
        a, b = gw["p99"] - d["p99"], bare["p99"] - d["p99"]
        rows.append(("added p99 over direct", "≤ bare's + 150 µs", f"{a:.0f} µs (bare {b:.0f} µs)",
                     a <= b + 150))
    errs = sum(s["errors"] for k, s in S.items() if k.startswith("gw"))
    rows.append(("errors (a2a-egress, all scenarios)", "0", str(errs), errs == 0))
    # The shipped configuration's rows only: the thread-count, work-stealing and allocator
    # variants are there to compare, not to meet the target.
    variants = ("gw2thread", "gw4thread", "gwnosteal", "gwalt", "gwotel")
    reuse = [s["reuse"] for k, s in S.items()
             if k.startswith("gw") and not k.startswith(variants) and s["reuse"] is not None]
    if reuse:
        rows.append(("upstream connection reuse (a2a-egress, nginx upstream)", "≥ 99.9%",
                     f"{min(reuse):.3f}%", min(reuse) >= 99.9))
    sse = ctx["sse"]
    d03, g03 = sse.get("direct (0.3 agent)"), sse.get("a2a-egress → 0.3 agent")
    if d03 and g03 and d03["ttfe_ms"] is not None and g03["ttfe_ms"] is not None:
        dt = g03["ttfe_ms"] - d03["ttfe_ms"]
        rows.append(("SSE time to first event through the 0.3 translation vs direct",
                     "within +0.5 ms", f"{dt:+.2f} ms ({g03['events']} of {d03['events']} events)",
                     dt <= 0.5 and g03["events"] == d03["events"]))
    if "direct" in sse and "a2a-egress" in sse and sse["direct"]["ttfe_ms"] is not None:
        dt = sse["a2a-egress"]["ttfe_ms"] - sse["direct"]["ttfe_ms"]
        rows.append(("SSE time to first event vs direct", "within 1 ms", f"+{dt:.2f} ms", dt <= 1.0))
        same = sse["a2a-egress"]["events"] == sse["direct"]["events"]
        span = (sse["a2a-egress"]["span_ms"] or 0) >= 0.8 * (sse["direct"]["span_ms"] or 0)
        rows.append(("SSE events arrive as sent", "same count, same spacing",
                     f"{fmt(sse['a2a-egress']['events'])} events over "
                     f"{fmt(sse['a2a-egress']['span_ms'], 1)} ms", same and span))
    if gw:
        rows.append((f"idle RSS ({GATEWAY_INTEGRATIONS} integrations)", "≤ 16 MB", f"{gw['rss_idle'] / 1024:.1f} MB", gw["rss_idle"] <= 16 * 1024))
        rows.append((f"RSS under load ({GATEWAY_INTEGRATIONS} integrations)", "≤ 32 MB",
                     f"{(gw['rss_peak'] or 0) / 1024:.1f} MB", (gw["rss_peak"] or 0) <= 32 * 1024))
    crit = dict(ctx["criterion"])
    parse, full = crit.get("card_50k/serde_json_from_slice_value"), crit.get("card_50k/compile_and_digest")
    if parse and full:
        rows.append(("compile + digest of a 50 KB card vs bare parse", "≤ 4×", f"{full / parse:.2f}×",
                     full / parse <= 4))
        whole = crit.get("card_50k/validate_compile_digest")
        if whole:
            rows.append(("… validate + compile + digest from bytes", "(shown)", f"{whole / parse:.2f}×", None))
    cfg = crit.get("config/validate_100k_integrations")
    if cfg:
        rows.append(("validate --config of 100,000 integrations (read, parse, validate)", "< 1 s",
                     f"{cfg / 1e3:.0f} ms", cfg < 1e6))
    pol = crit.get("request/1k")
    if pol:
        rows.append(("policy + shaping of a 1 KB request", "≤ 5 µs", f"{pol:.2f} µs", pol <= 5))
    # Issue 20: a translated call costs at most +15% CPU per request over the untranslated 1.0
    # path. The gateway's measured CPU per 1 KB SendMessage is the base; a translation's extra is
    # its request side over the 1.0 policy row plus its answer side (the transport beside
    # pingora's, for gRPC, is not in it).
    for label, req, back in (
            ("1 KB SendMessage to a 0.3 agent: CPU per request vs 1.0 JSON-RPC",
             "request/1k_v03", "translate/answer_1k"),
            ("1 KB SendMessage to a gRPC agent: translation CPU per request vs 1.0 JSON-RPC",
             "request/1k_grpc", "translate/grpc_answer_1k"),
            ("1 KB SendMessage moved JSON-RPC → HTTP+JSON: CPU per request vs unmoved",
             "request/1k_cross", "translate/cross_answer_1k")):
        there, answer = crit.get(req), crit.get(back)
        if there and answer and gw and gw.get("cpu_us"):
            extra = (there - (pol or 0)) + answer
            rows.append((label, "≤ +15%",
                         f"+{extra / gw['cpu_us'] * 100:.1f}% ({extra:.2f} µs over {gw['cpu_us']:.1f} µs)",
                         extra / gw["cpu_us"] <= 0.15))
    rows += constrained.targets(ctx)
    sc = [r["cpu_us"] for r in ctx["scale"] if r["cpu_us"]]
    if len(sc) >= 2:
        spread = max(sc) / min(sc) - 1
        rows.append(("per-request CPU from 1 to 1,000 integrations", "flat ±10%",
                     " / ".join(f"{x:.1f}" for x in sc) + f" µs ({spread * 100:.0f}% spread)",
                     spread <= 0.10))
    return rows


def telemetry_rows(S, ctx):
    """Issue 23: CPU per request with every call traced (SERVER and CLIENT span, exported by
    OTLP/HTTP to a local receiver) as a ratio to the same gateway untraced; target ≤ +10%."""
    on, off = S.get("gwotel-send1k"), S.get("gw-send1k")
    if not (on and off and on["cpu_us"] and off["cpu_us"]):
        return []
    r = on["cpu_us"] / off["cpu_us"]
    sink = ctx.get("otlp") or {}
    got = (f", {sink['requests']:,} exports of {sink['bytes'] / 1e6:.1f} MB received"
           if sink else "")
    return [("CPU/req with traces on (100% sampled, OTLP/HTTP) vs off (1 KB)", "≤ 1.10×",
             f"{r:.2f}× ({on['cpu_us']:.1f} vs {off['cpu_us']:.1f} µs{got})", r <= 1.10)]


def telemetry_only(args):
    """`--telemetry-only`: the fixed upstream, the gateway untraced and traced, saturated in
    interleaved rounds; prints the CPU per request of each and their ratio (no RESULTS.md)."""
    os.makedirs(args.out, exist_ok=True)
    procs = Procs(args.out)
    sink = OtlpSink()
    try:
        fixed, _agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        cfg = gateway_conf(args.out, "gateway", fixed, _agent)
        gw = start_gateway(procs, "gateway", args.bin, cfg, log=True)
        gwotel = start_gateway(procs, "gateway-otel", args.bin, with_telemetry(cfg, sink.url),
                               log=True, extra_env=OTEL_ENV)
        up, body = Accepts(fixed), message_body(1024)
        T = [Target("gw-send1k", "a2a-egress, access log on",
                    f"http://{gw[1]['proxy']}/agents/fixed", body, gw[0], up, "send1k"),
             Target("gwotel-send1k", "a2a-egress, access log on, traces on",
                    f"http://{gwotel[1]['proxy']}/agents/fixed", body, gwotel[0], up, "send1k")]
        for r in range(args.rounds):
            for t in T:
                t.sat.append(saturate(t, args.out, args.seconds))
                print(f"    round {r + 1} {t.key}: {t.sat[-1]['rps']:,.0f} req/s, "
                      f"{t.sat[-1]['cpu_us']:.1f} µs/req", flush=True)
        # Whatever is still queued leaves within the batch delay.
        time.sleep(2)
    finally:
        procs.stop_all()
    S = {t.key: summary(t) for t in T}
    requests, nbytes = sink.read()
    for goal, want, got, ok in telemetry_rows(S, {"otlp": {"requests": requests, "bytes": nbytes}}):
        print(f"{goal}: {got} (target {want}: {'met' if ok else 'not met'})")
    print(f"traced calls: {S['gwotel-send1k']['requests']:,}; OTLP exports received: {requests:,} "
          f"({nbytes / 1e6:.1f} MB)")


def guard_gateways(procs, out, bin_path, fixed, agent):
    """The guard rows' two gateways (access log on, the same binary and config but for the
    `guard` line): `fixed` without a guard, and with every built-in detector on."""
    gws = []
    for on in (False, True):
        name = f"gateway-guard{'on' if on else 'off'}"
        cfg = gateway_conf(out, name, fixed, agent, fixed_card=GUARD_CARD_PATH,
                           fixed_extra=GUARD_TABLE if on else "")
        gws.append(start_gateway(procs, name, bin_path, cfg, log=True))
    return gws


def guard_targets(gws, fixed):
    """Per body size, the guard-off and the guard-on gateway's `fixed` integration."""
    up, T = Accepts(fixed), []
    for label, key, size in GUARD_SIZES:
        body = guard_body(size)
        for on, (p, line) in ((False, gws[0]), (True, gws[1])):
            T.append(Target(f"guard{'on' if on else 'off'}-{key}",
                            f"a2a-egress, {label}, guard " + ("on (every built-in, record)" if on else "off"),
                            f"http://{line['proxy']}/agents/fixed", body, p, up, f"guard{key}"))
    return T


def guard_findings(gw):
    """Findings the gateway counted (`a2a_egress_guard_findings_total`, every series summed)."""
    _, body = http_get(f"http://{gw[1]['admin']}/metrics")
    return sum(float(ln.rsplit(None, 1)[1]) for ln in body.decode(errors="replace").splitlines()
               if ln.startswith("a2a_egress_guard_findings_total"))


def guard_load(procs, out, bin_path, fixed, agent, rounds, seconds):
    """The guard rows' saturation: both gateways, both body sizes, in interleaved rounds. Answers
    the summaries by target key, the targets' labels and the findings the guard-on gateway
    counted (0: the bodies hold none)."""
    gws = guard_gateways(procs, out, bin_path, fixed, agent)
    T = guard_targets(gws, fixed)
    print(f"==> content guard on vs off: {rounds} interleaved rounds of {seconds} s", flush=True)
    for r in range(rounds):
        for t in T:
            t.sat.append(saturate(t, out, seconds))
            print(f"    round {r + 1} {t.key}: {t.sat[-1]['rps']:,.0f} req/s, "
                  f"{t.sat[-1]['cpu_us']:.1f} µs/req", flush=True)
    for t in T:
        t.rss_peak = status_kb(t.proc, "VmHWM")
    found = guard_findings(gws[1])
    for p, _ in gws:
        procs.stop(p)
    return {"S": {t.key: summary(t) for t in T}, "labels": {t.key: t.label for t in T},
            "runs": {t.key: t.sat for t in T}, "findings": found}


def guard_instructions(procs, out, bin_path, fixed, n):
    """Instructions per request (callgrind, every thread) of the guard rows: the gateway (access
    log on) without a guard and with every built-in, for each body size; a 64 KB call costs tens
    of times a 1 KB one under callgrind, so it is counted over a quarter as many calls."""
    rows = {}
    for on in (False, True):
        cfg = with_log(gateway_conf(out, f"gateway-cgg-{on}", fixed, "127.0.0.1:9", total=3,
                                    fixed_card=GUARD_CARD_PATH,
                                    fixed_extra=GUARD_TABLE if on else ""), bin_path, True)
        for _, key, size in GUARD_SIZES:
            def gw(vg, cfg=cfg, on=on, key=key):
                return callgrind_gateway(procs, f"cgg-gw-{key}-{on}", vg, bin_path, cfg, True)
            calls = n if size <= 1024 else max(n // 4, 50)
            rows[f"guard{'on' if on else 'off'}-{key}"] = instructions_per_request(
                procs, out, f"guard-{'on' if on else 'off'}-{key}", gw,
                lambda line: f"http://{line['proxy']}/agents/fixed", guard_body(size), calls)
    return rows


def guard_share(kind, unit, nd, s1, s64):
    """The linearity row: the guard's 64 KB share (on minus off) against 64× its 1 KB share."""
    goal = f"content guard's 64 KB scanning share vs 64× its 1 KB share ({kind})"
    if s1 is None or s64 is None:
        return []
    if s1 <= 0:
        return [(goal, "≤ 64×", f"64 KB share {s64:,.{nd}f} {unit}; the 1 KB share "
                 f"({s1:,.{nd}f} {unit}) is not above the noise", None)]
    return [(goal, "≤ 64×", f"{s64:,.{nd}f} vs 64 × {s1:,.{nd}f} = {64 * s1:,.{nd}f} {unit} "
             f"({s64 / s1:.1f}×)", s64 <= 64 * s1)]


def guard_rows(g):
    """Issue 22: CPU (and, when counted, instructions) per request with every built-in detector
    on as a ratio to the guard off, at 1 KB (target ≤ +20%) and 64 KB, and the linearity row."""
    rows = []
    for kind, unit, fig, nd in (("CPU/req", "µs", "cpu", 1), ("instructions/req", "instr.", "ins", 0)):
        val = (lambda k: (g["S"].get(k) or {}).get("cpu_us")) if fig == "cpu" else \
            (lambda k: (g.get("instructions") or {}).get(k))
        shares = {}
        for label, key, _ in GUARD_SIZES:
            on, off = val(f"guardon-{key}"), val(f"guardoff-{key}")
            if not (on and off):
                continue
            shares[key] = on - off
            r = on / off
            rows.append((f"{kind} with the content guard on (every built-in) vs off ({label})",
                         "≤ 1.20×" if key == "1k" else "(shown)",
                         f"{r:.2f}× ({on:,.{nd}f} vs {off:,.{nd}f} {unit})",
                         r <= 1.20 if key == "1k" else None))
        rows += guard_share(kind, unit, nd + 1 if nd else 0, shares.get("1k"), shares.get("64k"))
    return rows


def criterion_bytes(target_dir):
    """Bytes per iteration of the criterion benches that declare a byte throughput."""
    base, got = os.path.join(target_dir, "criterion"), {}
    for dirpath, _, files in os.walk(base):
        if "benchmark.json" in files and dirpath.endswith(os.sep + "new"):
            try:
                tp = json.load(open(os.path.join(dirpath, "benchmark.json"))).get("throughput") or {}
            except (OSError, ValueError):
                continue
            if "Bytes" in tp:
                got[os.path.relpath(os.path.dirname(dirpath), base)] = tp["Bytes"]
    return got


def guard_matcher_rows(crit, nbytes):
    """`benches/guard.rs` in MB/s: the matcher alone, a plain memchr pass over the same bytes, and
    the whole request scan, per size."""
    rows = []
    for label, key, _ in GUARD_SIZES:
        mbs = {}
        for what in ("matcher", "memchr", "scan_request"):
            name = f"guard/{what}/{key}"
            if crit.get(name) and nbytes.get(name):
                mbs[what] = nbytes[name] / crit[name]
        if mbs:
            rows.append((label, mbs))
    return rows


def print_guard(g):
    S = g["S"]
    for _, key, _ in GUARD_SIZES:
        for k in (f"guardoff-{key}", f"guardon-{key}"):
            if k in S:
                print(f"{g['labels'][k]:48} {fmt(S[k]['rps']):>8} req/s  {fmt(S[k]['cpu_us'], 1):>6} µs/req  "
                      f"errors {S[k]['errors']}")
    for goal, want, got, ok in guard_rows(g):
        print(f"{goal}: {got} (target {want}: {'met' if ok else 'not met' if ok is not None else '–'})")
    print(f"guard findings counted by the guard-on gateway: {g['findings']:.0f}")


def guard_only(args):
    """`--guard-only`: the fixed upstream, the gateway with and without the content guard at 1 KB
    and 64 KB, saturated in interleaved rounds; prints CPU per request and the ratios."""
    os.makedirs(args.out, exist_ok=True)
    procs = Procs(args.out)
    try:
        fixed, agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        g = guard_load(procs, args.out, args.bin, fixed, agent, args.rounds, args.seconds)
    finally:
        procs.stop_all()
    print_guard(g)


def print_guard_instructions(args):
    """`--instructions-only --guard-only`: the guard rows in instructions per request."""
    os.makedirs(args.out, exist_ok=True)
    procs = Procs(args.out)
    n = 500 if args.quick else 1000
    try:
        fixed, _agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        rows = guard_instructions(procs, args.out, args.bin, fixed, n)
    finally:
        procs.stop_all()
    for label, key, size in GUARD_SIZES:
        for on in (False, True):
            v = rows.get(f"guard{'on' if on else 'off'}-{key}")
            calls = n if size <= 1024 else max(n // 4, 50)
            print(f"a2a-egress, access log on, {label:5}, guard {'on ' if on else 'off'} "
                  + (f"{v:>12,.0f} instructions/request ({calls} calls)" if v else "-"))
    for goal, want, got, ok in guard_rows({"S": {}, "instructions": rows}):
        print(f"{goal}: {got} (target {want}: {'met' if ok else 'not met' if ok is not None else '–'})")


def constrained_only(args):
    """`--constrained-only`: the upstreams, the nginx proxy and the constrained section alone."""
    os.makedirs(args.out, exist_ok=True)
    started, load_start = time.time(), loadavg()
    procs = Procs(args.out)
    try:
        fixed, agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        nx = (free_port(), free_port(), free_port())
        conf = os.path.join(args.out, "nginx-proxy.conf")
        os.makedirs(os.path.join(args.out, "nginx-tmp-px"), exist_ok=True)
        with open(conf, "w") as f:
            f.write(nginx_proxy_conf(args.out, nx[0], nx[1], fixed, agent.split(":")[1], nx[2]))
        nginx, _ = procs.start("nginx-proxy", ["nginx", "-c", conf, "-p", args.out], CPU_PROXY)
        for port in nx:
            wait_port(port)
        ctx = {"constrained": constrained.run(procs, args.out, args, fixed, agent, nx[0],
                                              procs.items[0][1], nginx)}
    finally:
        procs.stop_all()
    L = [f"# Constrained sidecars only (`bench.py --constrained-only`{' --quick' if args.quick else ''})",
         "", f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, took "
         f"{time.time() - started:.0f} s, load average at start / end {load_start} / {loadavg()}.", ""]
    constrained.write(L.append, ctx)
    L += ["| target | goal | measured | met |", "|---|---|---|---|"]
    for goal, want, got, ok in constrained.targets(ctx):
        L.append(f"| {goal} | {want} | {got} | {'yes' if ok else 'no'} |")
    with open(args.results, "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"==> results written to {args.results}")


def print_instructions(args):
    """`--instructions-only`: the callgrind figures alone, printed (RESULTS.md is not written)."""
    os.makedirs(args.out, exist_ok=True)
    procs = Procs(args.out)
    try:
        fixed, _agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        rows = instructions(procs, args.out, args.bin, args.bare, fixed, 1000)
    finally:
        procs.stop_all()
    bare = rows.get("bare pingora")
    for name, n in rows.items():
        ratio = f"{n / bare:.2f}x bare pingora" if n and bare else "-"
        print(f"{name:32} {n:>12,.0f} instructions/request  {ratio}" if n else f"{name:32} -")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", required=True, help="release a2a-egress binary")
    ap.add_argument("--agent-bin", required=True, help="release a2a-agent binary (the reference agent)")
    ap.add_argument("--bare", required=True, help="release bare-pingora binary")
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True, help="directory for raw logs")
    ap.add_argument("--results", required=True, help="the RESULTS.md to write")
    ap.add_argument("--target-dir", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--alt-bin", help="the same gateway built on the other allocator")
    ap.add_argument("--alt-label", default="system allocator",
                    help="what --alt-bin differs in, for its rows")
    ap.add_argument("--instructions-only", action="store_true",
                    help="only count instructions per request (callgrind) and print them")
    ap.add_argument("--telemetry-only", action="store_true",
                    help="only the traces row: CPU per request with every call traced vs off, printed")
    ap.add_argument("--guard-only", action="store_true",
                    help="only the content guard rows: CPU per request with every built-in "
                         "detector on vs off at 1 KB and 64 KB, printed")
    ap.add_argument("--constrained-only", action="store_true",
                    help="only the constrained-sidecar section (benches/constrained.py), written "
                         "alone to --results")
    args = ap.parse_args()
    if args.instructions_only and args.telemetry_only:
        return print_telemetry_instructions(args)
    if args.instructions_only and args.guard_only:
        return print_guard_instructions(args)
    if args.instructions_only:
        return print_instructions(args)
    args.rounds, args.seconds = (1, 3) if args.quick else (3, 6)
    args.lat_rounds, args.lat_seconds = (1, 3) if args.quick else (2, 8)
    args.c_seconds = 2 if args.quick else 4
    if args.constrained_only:
        return constrained_only(args)
    if args.telemetry_only:
        return telemetry_only(args)
    if args.guard_only:
        return guard_only(args)
    scale_sizes = (1, 100) if args.quick else (1, 100, 1000)
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    ctx = {"quick": args.quick, "out": args.out, "load_start": loadavg(),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "versions": versions(args.bin, args.root), "rounds": args.rounds,
           "seconds": args.seconds, "lat_rounds": args.lat_rounds, "lat_seconds": args.lat_seconds}
    procs = Procs(args.out)
    try:
        fixed, agent = start_upstreams(procs, args.out, args.root, args.agent_bin)
        nx = (free_port(), free_port(), free_port())
        conf = os.path.join(args.out, "nginx-proxy.conf")
        os.makedirs(os.path.join(args.out, "nginx-tmp-px"), exist_ok=True)
        with open(conf, "w") as f:
            f.write(nginx_proxy_conf(args.out, nx[0], nx[1], fixed, agent.split(":")[1], nx[2]))
        P = {"nginx-upstream": procs.items[0][1], "agent": procs.items[1][1]}
        P["nginx-proxy"], _ = procs.start("nginx-proxy", ["nginx", "-c", conf, "-p", args.out],
                                          CPU_PROXY)
        for port in nx:
            wait_port(port)
        bare_f, bare_a = free_port(), free_port()
        P["bare-fixed"], _ = procs.start("bare-fixed", [args.bare, f"127.0.0.1:{bare_f}",
                                                        f"127.0.0.1:{fixed}"], CPU_PROXY,
                                         first_line=True)
        P["bare-agent"], _ = procs.start("bare-agent", [args.bare, f"127.0.0.1:{bare_a}", agent],
                                         CPU_PROXY, first_line=True)
        wait_port(bare_f)
        wait_port(bare_a)
        cfg = gateway_conf(args.out, "gateway", fixed, agent)
        gw = start_gateway(procs, "gateway", args.bin, cfg, log=True)
        gw_nolog = start_gateway(procs, "gateway-nolog", args.bin, cfg, log=False)
        # The runtime's thread count, side by side: the default (the CPUs it may use: 1, pinned
        # to CPU 0), 2 and 4.
        gw2 = start_gateway(procs, "gateway-2thread", args.bin, cfg, log=True, threads=2)
        gw4 = start_gateway(procs, "gateway-4thread", args.bin, cfg, log=True, threads=4)
        # Work stealing off: the data plane on pingora's no-steal runtime.
        gwns = start_gateway(procs, "gateway-nosteal", args.bin, cfg, log=True,
                             work_stealing=False)
        # The same gateway on the other allocator (the system one, beside the mimalloc default).
        gwalt = (start_gateway(procs, "gateway-alt-alloc", args.alt_bin, cfg, log=True)
                 if args.alt_bin else None)
        # Every call traced, exported to a local OTLP/HTTP receiver (issue 23's traces row).
        sink = OtlpSink()
        gwotel = start_gateway(procs, "gateway-otel", args.bin, with_telemetry(cfg, sink.url),
                               log=True, extra_env=OTEL_ENV)
        time.sleep(1)
        ports = {"fixed": fixed, "agent": agent, "nginx": nx, "bare_fixed": bare_f,
                 "bare_agent": bare_a, "procs": P, "gw2": gw2, "gw4": gw4, "gwns": gwns, "gwalt": gwalt,
                 "gwotel": gwotel, "alt_label": args.alt_label}
        targets = build_targets(procs, args.out, args.bin, (gw, gw_nolog), ports)
        ctx["targets"] = targets
        ctx["rates"] = run_load(targets, args.out, args)
        requests, nbytes = sink.read()
        ctx["otlp"] = {"requests": requests, "bytes": nbytes}
        for t in targets:
            t.rss_peak = status_kb(t.proc, "VmHWM") if t.proc else None
        print("==> SSE pass-through", flush=True)
        st, body, hdrs = sse_targets(procs, agent, nx[2], bare_a, gw[1]["proxy"])
        ctx["sse"] = run_sse(st, body, hdrs, 3 if args.quick else 10)
        ctx["sse"].update(sse_v03(procs, args.out, args.bin, 3 if args.quick else 20))
        ctx["threads"] = {"a2a-egress": threads(gw[0]), "bare pingora": threads(P["bare-fixed"]),
                          "nginx proxy": threads(P["nginx-proxy"])}
        # Issue 22's rows: a gateway pair of their own (their card takes data parts), stopped after.
        ctx["guard"] = guard_load(procs, args.out, args.bin, fixed, agent, args.rounds,
                                  args.seconds)
        ctx["instructions"] = {}
        if shutil.which("valgrind") and shutil.which("callgrind_control"):
            print("==> instructions per request (callgrind)", flush=True)
            alt = (args.alt_label, args.alt_bin) if args.alt_bin else None
            ctx["instructions"] = instructions(procs, args.out, args.bin, args.bare, fixed,
                                               500 if args.quick else 1000, alt)
            ctx["guard"]["instructions"] = guard_instructions(procs, args.out, args.bin, fixed,
                                                              500 if args.quick else 1000)
        print(f"==> scale: {scale_sizes} integrations", flush=True)
        ctx["scale"] = scale(procs, args.out, args.bin, fixed, args.seconds, scale_sizes)
        ctx["constrained"] = constrained.run(procs, args.out, args, fixed, agent, nx[0],
                                             P["nginx-upstream"], P["nginx-proxy"])
    finally:
        procs.stop_all()
    ctx["criterion"] = criterion_rows(args.target_dir)
    ctx["criterion_bytes"] = criterion_bytes(args.target_dir)
    ctx["load_end"] = loadavg()
    ctx["took"] = time.time() - started
    write_results(args.results, ctx)
    print(f"==> results written to {args.results} (raw logs in {args.out})")


if __name__ == "__main__":
    main()
