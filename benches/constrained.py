"""Constrained sidecars: tail latency of a2a-egress beside bare pingora where sidecars really run.

Used by bench.py (python3 standard library only). Three placements of the proxy under test, each
with a gateway and a bare pingora started afresh in it (the gateway reads its CPUs at start):

- `pinned`: pinned to CPU 0 (`taskset -c 0`);
- `half`: pinned to CPU 0 *and* in a cgroup of its own with a CFS quota of half a CPU
  (`cpu.cfs_quota_us` = 50 ms per 100 ms under /sys/fs/cgroup/cpu on cgroup v1, `cpu.max` on
  v2), created by this script and removed at the end (needs root). Pinned as well, so the quota and
  not the load generator decides what the proxy gets;
- `two`: unpinned, on both CPUs (bare pingora with 2 threads, the gateway with its default).

In each, the saturation of both proxies is measured (wrk), then `oha --latency-correction` runs at
25%, 50% and 75% of the slower one's, side by side and interleaved, every request bounded by a
1 s deadline (a request cut by it is counted apart). The load generators and the fixed-reply nginx
upstream stay on CPU 1. In `pinned`, direct (no proxy) and the nginx proxy run at the same rates,
for the "added p50 over direct" target.

In `pinned`, one more run per target at 50% load under `perf stat` (when perf and its
`raw_syscalls` tracepoint are here) counts system calls and context switches per request: the
profile that says where the added p50 over nginx comes from.

Then the periodic jobs, one at a time, on a pinned gateway at 50% load: each job made frequent
(or, for the access log, turned off) beside the defaults, so its effect on p99 shows; and one
with the access log off and the opt-in waker `[runtime] keep_warm` on (`proxy::keep_warm`), which
shows what it costs a gateway that has its CPU to itself.
"""

import os
import shutil
import subprocess
import threading
import time
import urllib.request

import bench as b

LOADS = (0.25, 0.5, 0.75)
DEADLINE = "1s"
MODES = (
    ("pinned", "pinned to one CPU"),
    ("half", "half a CPU (CFS quota 50 ms / 100 ms, on CPU 0)"),
    ("two", "unpinned, two CPUs"),
)


class HalfCpu:
    """A cgroup with a CPU quota of half a CPU; `wrap(argv)` starts a command inside it."""

    def __init__(self, name):
        v1 = "/sys/fs/cgroup/cpu"
        leaf = f"a2a-egress-bench-{name}-{os.getpid()}"
        if os.path.exists(os.path.join(v1, "cpu.cfs_quota_us")):
            self.path = os.path.join(v1, leaf)
            os.mkdir(self.path)
            self._write("cpu.cfs_period_us", "100000")
            self._write("cpu.cfs_quota_us", "50000")
        else:
            root = "/sys/fs/cgroup"
            with open(os.path.join(root, "cgroup.controllers")) as f:
                if "cpu" not in f.read().split():
                    raise SystemExit("cgroup v2 without the cpu controller: no half-CPU row")
            with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
                f.write("+cpu")
            self.path = os.path.join(root, leaf)
            os.mkdir(self.path)
            self._write("cpu.max", "50000 100000")

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def wrap(self, argv):
        # The shell moves itself into the cgroup, then becomes the command: the process reads
        # its quota at start as it would in a pod.
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"',
                os.path.join(self.path, "cgroup.procs")] + argv

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


def start_pair(procs, out, mode, bin_path, bare_path, cfg, fixed):
    """The gateway (defaults, access log on) and bare pingora, placed as `mode` says."""
    cpu = None if mode == "two" else b.CPU_PROXY
    groups = [HalfCpu("gateway"), HalfCpu("bare")] if mode == "half" else []
    env = b.gateway_env(True, bin_path)
    argv = [bin_path, "serve", "--config", cfg]
    if mode == "half":
        argv = groups[0].wrap(argv)
    gw, line = procs.start(f"gw-{mode}", argv, cpu, env=env, first_line=True)
    b.wait_ready(line["admin"])
    port = b.free_port()
    bare_argv = [bare_path, f"127.0.0.1:{port}", f"127.0.0.1:{fixed}"]
    if mode == "half":
        bare_argv = groups[1].wrap(bare_argv)
    bare_env = {"BARE_PINGORA_THREADS": "2" if mode == "two" else "1"}
    bare, _ = procs.start(f"bare-{mode}", bare_argv, cpu, env=bare_env, first_line=True)
    b.wait_port(port)
    return (gw, line), (bare, port), groups


def measure_mode(procs, out, args, mode, cfg, fixed, extra):
    """One placement: saturation of both, then the three loads; `extra` adds targets (pinned)."""
    gwp, barep, groups = start_pair(procs, out, mode, args.bin, args.bare, cfg, fixed)
    up = b.Accepts(fixed)
    body = b.message_body(1024)
    gw = b.Target(f"c-{mode}-gw", "a2a-egress (defaults, access log on)",
                  f"http://{gwp[1]['proxy']}/agents/fixed", body, gwp[0], up, mode)
    bare = b.Target(f"c-{mode}-bare", "bare pingora",
                    f"http://127.0.0.1:{barep[1]}/a2a/jsonrpc", body, barep[0], up, mode)
    proxies = [gw, bare]
    for _ in range(args.rounds):
        for t in proxies:
            t.sat.append(b.saturate(t, out, args.c_seconds))
    sat = min(b.median([r["rps"] for r in t.sat]) or 1 for t in proxies)
    rows = {"mode": mode, "sat": sat, "threads": gwp[1].get("worker_threads"),
            "threads_from": gwp[1].get("worker_threads_from"), "loads": {}}
    targets = proxies + extra(mode)
    for load in LOADS:
        rate = max(int(sat * load), 1)
        runs = {t.key: [] for t in targets}
        for _ in range(args.lat_rounds):
            for t in targets:
                r = b.measured(t, lambda t=t: fixed_rate(t, out, args.lat_seconds, rate))
                runs[t.key].append(r)
                print(f"    {mode} {int(load * 100)}% {t.key}: p50 {b.fmt(r['p50'])} µs, "
                      f"p99 {b.fmt(r['p99'])} µs, p99.9 {b.fmt(r['p999'])} µs, "
                      f"cut {r['cut']}", flush=True)
        rows["loads"][load] = {"rate": rate, "targets": [(t.key, t.label, runs[t.key])
                                                          for t in targets]}
    if mode == "pinned":
        rate = max(int(sat * 0.5), 1)
        rows["kernel"] = [(t.label, kernel_work(t, out, args.lat_seconds, rate)) for t in targets]
    procs.stop(gwp[0])
    procs.stop(barep[0])
    for g in groups:
        g.remove()
    return rows


def fixed_rate(t, out, seconds, rate):
    path = os.path.join(out, f"{t.key}.body")
    with open(path, "w") as f:
        f.write(t.body)
    return b.run_oha(t.url, path, b.HEADERS, seconds, rate, timeout=DEADLINE)


def kernel_work(t, out, seconds, rate):
    """One fixed-rate run with `perf stat` on the target's processes: system calls, context
    switches and CPU per request (None when perf cannot count here)."""
    if not shutil.which("perf"):
        return None
    pids = ",".join(str(p) for p in b.pids_of(t.proc))
    perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e",
                             "raw_syscalls:sys_enter,context-switches,task-clock",
                             "-p", pids, "--", "sleep", str(seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    r = fixed_rate(t, out, seconds, rate)
    _, err = perf.communicate(timeout=seconds + 30)
    counts = {}
    for line in err.splitlines():
        f = line.split(",")
        if len(f) > 2:
            try:
                counts[f[2]] = float(f[0])
            except ValueError:
                return None
    n = max(r.get("requests", 0), 1)
    if "raw_syscalls:sys_enter" not in counts:
        return None
    return {"syscalls": counts["raw_syscalls:sys_enter"] / n,
            "switches": counts.get("context-switches", 0) / n,
            "cpu_us": counts.get("task-clock", 0) * 1e3 / n, "p50": r["p50"]}


class Every(threading.Thread):
    """Calls `fn` every `period` seconds until stopped (a periodic job made frequent)."""

    def __init__(self, period, fn):
        super().__init__(daemon=True)
        self.period, self.fn, self.stop = period, fn, threading.Event()

    def run(self):
        while not self.stop.wait(self.period):
            try:
                self.fn()
            except OSError:
                pass


def post(url):
    req = urllib.request.Request(url, data=b"", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()
    except urllib.error.HTTPError as e:
        e.read()


def with_tables(cfg, name, text):
    """A copy of `cfg` with TOML `text` inserted before `[listen]`."""
    path = cfg.replace(".toml", f"-{name}.toml")
    with open(cfg) as f, open(path, "w") as g:
        g.write(f.read().replace("[listen]", text + "[listen]", 1))
    return path


def with_probes(cfg):
    """Probes as frequent as the config allows, on every integration's echo skill."""
    path = with_tables(cfg, "probes", '[probes]\nevery = "1m"\nmin_interval = "0s"\n'
                       'spacing = "0s"\n')
    with open(path) as f:
        text = f.read()
    text = text.replace('skills = ["echo"]\n',
                        'skills = ["echo"]\n[integrations.probe]\nskill = "echo"\n'
                        'text = "echo a2a-egress probe"\n')
    with open(path, "w") as f:
        f.write(text)
    return path


def periodic(procs, out, args, cfg, fixed, rate):
    """Each periodic job's effect on p99: pinned gateways at `rate`, side by side."""
    up = b.Accepts(fixed)
    body = b.message_body(1024)
    variants = []

    def gateway(key, label, config, log=True):
        p, line = b.start_gateway(procs, f"gw-job-{key}", args.bin, config, log=log)
        t = b.Target(f"job-{key}", label, f"http://{line['proxy']}/agents/fixed", body, p, up,
                     "jobs")
        variants.append((t, line))
        return line

    names = [f"pad{i}" for i in range(b.GATEWAY_INTEGRATIONS - 3)] + ["fixed", "ref", "refoff"]
    gateway("defaults", "defaults (access log on; config polled every 1 s)", cfg)
    gateway("nolog", "access log off", cfg, log=False)
    gateway("warm", "access log off, `[runtime] keep_warm = \"500us\"` (a waker while busy)",
            with_tables(cfg, "warm", '[runtime]\nkeep_warm = "500us"\n'), log=False)
    m = gateway("metrics", "/metrics scraped every 100 ms", cfg)
    r = gateway("refresh", "a forced card refresh of all 10 integrations every 1 s",
                with_tables(cfg, "refresh", '[admin]\nrefresh_min_interval = "0s"\n'))
    reload_cfg = with_tables(cfg, "reload", "")
    gateway("reload", "the config file rewritten every 1 s (reload by difference)", reload_cfg)
    jobs = {
        "job-metrics": (0.1, lambda: b.http_get(f"http://{m['admin']}/metrics")),
        "job-refresh": (1.0, lambda: [post(f"http://{r['admin']}/v1/integrations/{n}/refresh")
                                      for n in names]),
        "job-reload": (1.0, rewrite(reload_cfg)),
    }
    results = {t.key: [] for t, _ in variants}
    for _ in range(args.lat_rounds):
        for t, _ in variants:
            job = jobs.get(t.key)
            runner = Every(*job) if job else None
            if runner:
                runner.start()
            res = b.measured(t, lambda t=t: fixed_rate(t, out, args.lat_seconds, rate))
            if runner:
                runner.stop.set()
                runner.join()
            results[t.key].append(res)
            print(f"    jobs {t.key}: p99 {b.fmt(res['p99'])} µs, p99.9 {b.fmt(res['p999'])} µs",
                  flush=True)
    # Scheduled probes: their first runs come within a tenth of `every` (6 s) of the start, so
    # the measurement starts at once, on a gateway started for it, once per round.
    probes = b.Target("job-probes", "scheduled probes on the 8 integrations of the nginx "
                      "upstream (their first runs)", "", body, None, up, "jobs")
    results["job-probes"] = []
    for i in range(args.lat_rounds):
        p, line = b.start_gateway(procs, f"gw-job-probes-{i}", args.bin, with_probes(cfg),
                                  log=True)
        probes.url, probes.proc = f"http://{line['proxy']}/agents/fixed", p
        res = b.measured(probes, lambda: fixed_rate(probes, out, args.lat_seconds, rate))
        res["probe_runs"] = probe_runs(line["admin"])
        results["job-probes"].append(res)
        print(f"    jobs probes: p99 {b.fmt(res['p99'])} µs, runs {res['probe_runs']}", flush=True)
        procs.stop(p)
    for t, _ in variants:
        procs.stop(t.proc)
    labels = [(t.key, t.label) for t, _ in variants] + [(probes.key, probes.label)]
    return {"rate": rate, "labels": labels, "results": results}


def probe_runs(admin):
    """How many probe runs the gateway counted (a2a_egress_probe_runs_total, all labels)."""
    _, text = b.http_get(f"http://{admin}/metrics")
    n = 0
    for line in text.decode(errors="replace").splitlines():
        if line.startswith("a2a_egress_probe_runs_total"):
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def rewrite(path):
    """A job that rewrites `path` with a new trailing comment each time (its hash changes)."""
    n = [0]

    def job():
        n[0] += 1
        with open(path) as f:
            text = f.read().split("\n# rewrite ")[0]
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{text}\n# rewrite {n[0]}\n")
        os.replace(tmp, path)
    return job


def run(procs, out, args, fixed, agent, nginx_port, upstream_proc, nginx_proc):
    """Every row of the constrained section (see the module doc)."""
    cfg = b.gateway_conf(out, "constrained", fixed, agent)
    P = {}

    def extra(mode):
        if mode != "pinned":
            return []
        if "direct" not in P:
            P["direct"] = b.Target("c-pinned-direct", "direct (nginx upstream)",
                                   f"http://127.0.0.1:{fixed}/a2a/jsonrpc", b.message_body(1024),
                                   upstream_proc, b.Accepts(fixed), mode)
            P["nginx"] = b.Target("c-pinned-nginx", "nginx proxy, no access log",
                                  f"http://127.0.0.1:{nginx_port}/a2a/jsonrpc",
                                  b.message_body(1024), nginx_proc, b.Accepts(fixed), mode)
        return [P["direct"], P["nginx"]]

    modes, skipped = [], {}
    for mode, _ in MODES:
        if mode == "half":
            why = cgroup_unavailable()
            if why:
                print(f"==> constrained: half skipped ({why})", flush=True)
                skipped[mode] = why
                continue
        print(f"==> constrained: {mode}", flush=True)
        modes.append(measure_mode(procs, out, args, mode, cfg, fixed, extra))
    half_rate = modes[0]["loads"][0.5]["rate"]
    print(f"==> periodic jobs at {half_rate:,} req/s (pinned)", flush=True)
    jobs = periodic(procs, out, args, cfg, fixed, half_rate)
    return {"modes": modes, "jobs": jobs, "skipped": skipped}


def cgroup_unavailable():
    """Why no half-CPU cgroup can be made here (None: it can)."""
    try:
        HalfCpu("check").remove()
        return None
    except (OSError, SystemExit) as e:
        return f"no writable cgroup CPU controller: {e}"


def med(runs, key):
    return b.median([r.get(key) for r in runs])


def write(w, ctx):
    """The section of RESULTS.md (through `w`, one line per call)."""
    c = ctx.get("constrained")
    if not c:
        return
    w("## Constrained sidecars: 1 KB SendMessage, fixed rate at 25 / 50 / 75% of saturation")
    w("")
    w("Gateway with its defaults (access log on, threads from the CPUs it may use) beside bare "
      "pingora, each started afresh in the placement; `oha --latency-correction`, 16 "
      f"connections, every request bounded by a {DEADLINE} deadline (\"cut\": requests it cut); "
      "median of the rounds' percentiles. Load generator and upstream on CPU 1.")
    w("")
    w("| placement | threads chosen | load | req/s | target | p50 µs | p99 µs | p99.9 µs | cut |")
    w("|---|---|---|---|---|---|---|---|---|")
    names = dict(MODES)
    for m in c["modes"]:
        for load, row in m["loads"].items():
            for key, label, runs in row["targets"]:
                th = f"{m['threads']} ({m['threads_from']})" if key.endswith("-gw") else ""
                w(f"| {names[m['mode']]} | {th} | {int(load * 100)}% of {b.fmt(m['sat'])} | "
                  f"{b.fmt(row['rate'])} | {label} | {b.fmt(med(runs, 'p50'))} | "
                  f"{b.fmt(med(runs, 'p99'))} | {b.fmt(med(runs, 'p999'))} | "
                  f"{sum(r['cut'] for r in runs)} |")
    for mode, why in c.get("skipped", {}).items():
        w(f"| {names[mode]} | skipped: {why} | | | | | | | |")
    w("")
    pinned = [m for m in c["modes"] if m["mode"] == "pinned" and m.get("kernel")]
    if pinned and any(k for _, k in pinned[0]["kernel"]):
        w("### Kernel work per request: pinned to one CPU, 50% load (`perf stat`)")
        w("")
        w("| target | system calls | context switches | CPU µs (task-clock) | p50 µs |")
        w("|---|---|---|---|---|")
        for label, k in pinned[0]["kernel"]:
            if k:
                w(f"| {label} | {k['syscalls']:.1f} | {k['switches']:.2f} | "
                  f"{k['cpu_us']:.1f} | {b.fmt(k['p50'])} |")
        w("")
    j = c["jobs"]
    w(f"### Periodic jobs, one at a time: pinned to one CPU, {b.fmt(j['rate'])} req/s (50%)")
    w("")
    w("| gateway | p50 µs | p99 µs | p99.9 µs | p99 − defaults' µs | cut |")
    w("|---|---|---|---|---|---|")
    base = med(j["results"]["job-defaults"], "p99")
    for key, label in j["labels"]:
        runs = j["results"][key]
        p99 = med(runs, "p99")
        extra = ""
        if key == "job-probes":
            extra = f" ({sum(r.get('probe_runs', 0) for r in runs)} probe runs counted)"
        w(f"| {label}{extra} | {b.fmt(med(runs, 'p50'))} | {b.fmt(p99)} | "
          f"{b.fmt(med(runs, 'p999'))} | {b.fmt(p99 - base if p99 and base else None)} | "
          f"{sum(r['cut'] for r in runs)} |")
    w("")


def targets(ctx):
    """Rows of the targets table: (goal, want, got, ok)."""
    c = ctx.get("constrained")
    if not c:
        return []
    rows = []
    by = {m["mode"]: m for m in c["modes"]}

    def at(mode, load, suffix):
        for key, _, runs in by[mode]["loads"][load]["targets"]:
            if key.endswith(suffix):
                return runs
        return None

    gw, bare = at("pinned", 0.5, "-gw"), at("pinned", 0.5, "-bare")
    g99, b99 = med(gw, "p99"), med(bare, "p99")
    if g99 and b99:
        rows.append(("one CPU, 50%: p99 vs bare pingora's", "≤ bare + 1 ms",
                     f"{g99 / 1e3:.2f} ms (bare {b99 / 1e3:.2f} ms)", g99 <= b99 + 1000))
    g999, b999 = med(gw, "p999"), med(bare, "p999")
    if g999 and b999:
        rows.append(("one CPU, 50%: p99.9 vs bare pingora's", "≤ 2×",
                     f"{g999 / b999:.2f}× ({g999 / 1e3:.2f} ms)", g999 <= 2 * b999))
    d, n = at("pinned", 0.5, "-direct"), at("pinned", 0.5, "-nginx")
    gd, dd, nd = med(gw, "p50"), med(d, "p50"), med(n, "p50")
    bd = med(bare, "p50")
    if gd and dd and nd:
        also = f", bare pingora {bd - dd:.0f} µs" if bd else ""
        rows.append(("one CPU, 50%: added p50 over direct", "≤ nginx's + 100 µs",
                     f"{gd - dd:.0f} µs (nginx {nd - dd:.0f} µs{also})", gd - dd <= nd - dd + 100))
    half = at("half", 0.5, "-gw") if "half" in by else None
    if half:
        cut = sum(r["cut"] for r in half)
        rows.append(("half a CPU, 50%: requests cut by the 1 s deadline", "0", str(cut), cut == 0))
    return rows
