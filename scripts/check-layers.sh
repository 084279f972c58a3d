#!/usr/bin/env bash
# Fails when a module of src/ imports a module above it (the graph in ARCHITECTURE.md), and
# when the two crates of the workspace point the wrong way (see "The reference agent" below).
#
# Layers, top to bottom; a module may use only modules of layers below its own. Modules on one
# line are peers: neither may use the other.
#
#   main
#   cli
#   server
#   admin
#   select             (planner selection and its candidate view of the runtime state)
#   proxy  control  probe
#   metrics  telemetry  (the one Metrics struct | OpenTelemetry spans and their OTLP export)
#   state              (IntegrationState, Snapshot, Store, stale channel, prepared upstreams)
#   config  lock
#   profile  guard     (compiled profile | content guardrails)
#   card
#   json
#   types              (origin, versions, durations, error bodies)
#   seam               (the leaf, imports nothing of the crate: pingora's internals, see below)
#
# Every `crate::…` and `super::…` path in code counts (comments and string literals do not),
# grouped imports included. Test code (`#[cfg(test)]` modules and the files they load) may use
# any layer: a test may assemble the layers above to check a property end to end. The test kit
# (`src/testkit/`, compiled only for tests: `#[cfg(any(test, feature = "testkit"))]`, that feature
# by name; any other feature is not test code) is test code too, and no module outside test code
# may use it.
#
# The reference agent (agent/src, crate a2a-agent) is no layer of the gateway: it sits beside it
# and uses the gateway's library (`a2a_egress::…`) only for what both products share, the layers
# in AGENT_MAY_USE (card wire model and canonical JSON, profile types, protocol value types). The
# gateway never uses the agent: no `a2a_agent` in src/, no `a2a-agent` dependency in Cargo.toml.
# Test code is exempt here too.
#
# ALLOWED lists upward edges tolerated for a while, each as `from -> target module`, with why
# (none today). A new upward edge fails, and so does an entry that is no longer needed.
#
# Inside a module the same holds between files: no file-level circle (file A uses an item of file
# B, and B, directly or through other files of the module, uses A). ALLOWED_CIRCLES lists the
# circles tolerated for a while, as the sorted tuple of their files, with why.
#
# pingora's internals are used only through `seam` (src/seam/, whose doc is the upgrade checklist,
# one test per assumption): outside it (src/lib.rs included) a `pingora::` path must be the
# ProxyHttp surface in PINGORA_SURFACE, no other `pingora_*` crate is named, no pingora path is
# aliased (`use pingora… as`, `extern crate pingora… as`; `as _` aside), and pingora's session
# internals are not reached (`as_downstream`, `downstream_session`, and the session calls seam
# wraps, which `Session`'s `Deref` reaches). Test code is exempt.
#
# Usage: scripts/check-layers.sh [--graph]   (--graph also prints each module's direct uses)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

exec python3 - "$@" <<'PY'
import pathlib
import re
import sys

LAYERS = [
    ["main"],
    ["cli"],
    ["server"],
    ["admin"],
    ["select"],
    ["proxy", "control", "probe"],
    ["metrics", "telemetry"],
    ["state"],
    ["config", "lock", "translate"],
    ["profile", "guard"],
    ["card"],
    ["json"],
    ["types"],
    ["seam"],
]

# from unit -> target module (first two path segments): why it is still there.
ALLOWED = {}

# The gateway's layers the reference agent may use.
AGENT_MAY_USE = ["profile", "card", "json", "types"]

TIER = {unit: i for i, tier in enumerate(LAYERS) for unit in tier}


def unit_of(segments):
    """The layer unit of an absolute module path (list of segments below the crate root)."""
    if not segments:
        return None
    return segments[0]


def module_of(path, root="src"):
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return parts


def mask(text):
    """Comments and string/char literals blanked, so only code is searched."""
    out, i, n = [], 0, len(text)
    while i < n:
        c, nxt = text[i], text[i + 1:i + 2]
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j): depth, j = depth + 1, j + 2
                elif text.startswith("*/", j): depth, j = depth - 1, j + 2
                else: j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 300]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1])); i = j + 1
        elif c == "'":
            m = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            k = len(m.group(0)) if m else 1
            out.append(" " * k if m else c); i += k
        else:
            out.append(c); i += 1
    return "".join(out)


# `#[cfg(test)]`, or the test kit's `#[cfg(any(test, feature = "testkit"))]`, and nothing else:
# matched on the file's text as written (masking blanks the feature's name, so on masked code any
# `any(test, feature = …)`, `mimalloc` too, would count as test code), at a position masking
# kept (an attribute, not text inside a comment or a string).
TEST_CFG = r'#\[cfg\((?:test|any\(test,\s*feature\s*=\s*"testkit"\s*\))\)\]'


def drop_test_modules(code, text):
    """Blanks `#[cfg(test)] mod x { … }` blocks of `code` (`text` masked); returns the code and
    the names of `#[cfg(test)] mod x;` declarations (test code in other files)."""
    in_code = lambda m: code[m.start()] == "#"
    test_files = [m.group(1) for m in re.finditer(TEST_CFG + r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text) if in_code(m)]
    for m in reversed([m for m in re.finditer(TEST_CFG + r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text) if in_code(m)]):
        depth, j = 0, m.end() - 1
        while j < len(code):
            if code[j] == "{": depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0: break
            j += 1
        code = code[:m.start()] + re.sub(r"[^\n]", " ", code[m.start():j + 1]) + code[j + 1:]
    return code, test_files


def group_items(text, start):
    """Splits a `{…}` use group beginning at text[start] == '{' into items; returns (items, end)."""
    depth, j, items, cur = 0, start, [], ""
    while j < len(text):
        ch = text[j]
        if ch == "{":
            depth += 1
            if depth == 1: j += 1; continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                items.append(cur); break
        elif ch == "," and depth == 1:
            items.append(cur); cur = ""; j += 1; continue
        cur += ch; j += 1
    return [i.strip() for i in items if i.strip()], j


def expand(prefix, item):
    """Absolute paths named by one use-tree item under `prefix`."""
    m = re.match(r"([\w:]*?)(?:::)?\{", item)
    if m and item.endswith("}"):
        head = [s for s in m.group(1).split("::") if s]
        items, _ = group_items(item, item.index("{"))
        return [p for it in items for p in expand(prefix + head, it)]
    segs = [s for s in re.split(r"\s+as\s+", item)[0].split("::") if s and s != "self" and s != "*"]
    return [prefix + segs]


def references(code, module, is_main, root=None):
    """(line, absolute path) of every use of the crate's modules; with `root`, of every path
    starting with that name only (another crate's)."""
    if root is None:
        root = (r"(?:crate|a2a_egress)" if is_main else r"crate") + r"|(?:super::)*super"
    pattern = re.compile(r"(?<![\w:])(" + root + r")((?:::\w+)*)(::\{)?")
    for m in pattern.finditer(code):
        base = m.group(1)
        if base in ("crate", "a2a_egress"):
            prefix = []
        else:
            ups = base.count("super")
            prefix = module[:len(module) - ups] if ups <= len(module) else []
        segs = prefix + [s for s in m.group(2).split("::") if s]
        line = code.count("\n", 0, m.start()) + 1
        if m.group(3):
            items, _ = group_items(code, m.end() - 1)
            for it in items:
                for p in expand(segs, it):
                    yield line, p
        else:
            yield line, segs


def load(files):
    """Each file's code without comments, literals and inline test modules, and the files that
    only tests load."""
    sources, test_files = {}, set()
    for f in files:
        text = f.read_text()
        code, tests = drop_test_modules(mask(text), text)
        sources[f] = code
        for t in tests:
            base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") else f.with_suffix("")
            test_files.add(base / f"{t}.rs")
            test_files.add(base / t / "mod.rs")
    # Every file below a test-only module directory is test code (the test kit's files).
    dirs = [t.parent for t in test_files if t.name == "mod.rs"]
    test_files.update(f for f in files if any(d in f.parents for d in dirs))
    return sources, test_files


files = sorted(pathlib.Path("src").rglob("*.rs"))
sources, test_files = load(files)

violations, used, graph = [], set(), {}
for f in files:
    if f in test_files or f.name == "lib.rs":
        continue
    module = module_of(f)
    src = unit_of(module) if f.name != "main.rs" else "main"
    if src not in TIER:
        violations.append(f"{f}: module {'::'.join(module)} has no layer in scripts/check-layers.sh")
        continue
    for line, segs in references(sources[f], module, f.name == "main.rs"):
        dst = unit_of(segs)
        if dst is None or dst == src:
            continue
        graph.setdefault(src, set()).add(dst)
        if dst not in TIER:
            violations.append(f"{f}:{line}: crate::{'::'.join(segs)} is in no layer")
            continue
        if TIER[dst] > TIER[src]:
            continue
        target = "::".join(segs[:2])
        if (src, target) in ALLOWED:
            used.add((src, target))
            continue
        kind = "a peer" if TIER[dst] == TIER[src] else "a layer above"
        violations.append(f"{f}:{line}: {src} uses crate::{'::'.join(segs)} ({kind})")

# The reference agent: uses of the gateway's library only into AGENT_MAY_USE.
agent_files = sorted(pathlib.Path("agent/src").rglob("*.rs"))
agent_sources, agent_tests = load(agent_files)
for f in agent_files:
    if f in agent_tests:
        continue
    for line, segs in references(agent_sources[f], module_of(f, "agent/src"), False, r"a2a_egress"):
        dst = unit_of(segs)
        if dst is None:
            continue
        graph.setdefault("a2a-agent", set()).add(dst)
        if dst not in AGENT_MAY_USE:
            violations.append(f"{f}:{line}: the agent uses a2a_egress::{'::'.join(segs)} "
                              f"(it may use only {', '.join(AGENT_MAY_USE)})")
# ... and the gateway never uses the agent.
for f in files:
    for m in re.finditer(r"(?<![\w:])a2a_agent\b", sources[f]):
        line = sources[f].count("\n", 0, m.start()) + 1
        violations.append(f"{f}:{line}: the gateway uses the reference agent (a2a_agent)")
for line_no, line in enumerate(pathlib.Path("Cargo.toml").read_text().splitlines(), 1):
    if re.match(r"\s*a2a-agent\s*=", line):
        violations.append(f"Cargo.toml:{line_no}: the gateway depends on a2a-agent")
# pingora's internals only through `seam`: outside it, the ProxyHttp surface only.
PINGORA_SURFACE = [
    "proxy::ProxyHttp", "proxy::Session", "proxy::FailToProxy",
    "http::RequestHeader", "http::ResponseHeader", "prelude::HttpPeer",
    "Error", "ErrorType", "OrErr", "Result", "RetryType",
]
for f in files:
    if f in test_files or module_of(f)[:1] == ["seam"]:
        continue
    # An alias (`use pingora as pg;`, `use pingora::{protocols as p}`, `extern crate pingora_core
    # as core;`) would hide every later path from the check below: none outside seam (`as _`, a
    # trait brought into scope unnamed, names nothing).
    for m in re.finditer(r"(?<![\w:])(?:use\s+(?:::)?pingora\w*\b[^;]*?\bas\s+(?!_\b)\w+|extern\s+crate\s+pingora\w*\s+as\b)", sources[f]):
        line = sources[f].count("\n", 0, m.start()) + 1
        violations.append(f"{f}:{line}: an alias of a pingora path outside crate::seam "
                          "(name the ProxyHttp surface in full, or reach it through src/seam/)")
    for root in ("pingora", r"pingora_\w+"):
        for line, segs in references(sources[f], [], False, root):
            path = "::".join(segs)
            if not segs or (root == "pingora" and any(path == s or path.startswith(s + "::") for s in PINGORA_SURFACE)):
                continue
            name = "pingora" if root == "pingora" else "pingora_*"
            violations.append(f"{f}:{line}: {name}::{path} is a pingora internal outside crate::seam "
                              "(reach it through src/seam/ with a test of what it assumes)")
    # `Session` reaches pingora's server session through `as_downstream`, its pub field
    # `downstream_session` and `Deref`; the session calls seam wraps are named too, as `Deref`
    # reaches them without any of those names.
    for m in re.finditer(r"\b(?:as_downstream(?:_mut)?|downstream_session|read_body_or_idle|write_continue_response)\b", sources[f]):
        line = sources[f].count("\n", 0, m.start()) + 1
        violations.append(f"{f}:{line}: pingora's session internals outside crate::seam")
# File-level circles inside a module: file A uses an item of file B (a `crate::`/`super::` path
# that resolves to B's module) and B, directly or through other files of the same module, uses A.
# The module rule above cannot see them, and they make a module's files impossible to read (or
# test, or move) one at a time. Each file's uses are resolved to the deepest module that has a
# file of its own.
def file_graph(files, sources, tests, root, within_unit):
    """file -> {file it uses: first line}, for the files of one crate. `within_unit`: only uses
    inside the file's own top-level module (the gateway, whose modules the layer rule above
    already orders); otherwise every use inside the crate (the agent, which has no layers)."""
    file_of = {}
    for f in files:
        if f in tests or f.name in ("lib.rs", "main.rs"):
            continue
        file_of[tuple(module_of(f, root))] = f
    graph = {}
    for f in files:
        if f in tests or f.name in ("lib.rs", "main.rs"):
            continue
        module = module_of(f, root)
        for line, segs in references(sources[f], module, False):
            if not segs or (within_unit and segs[0] != module[0]):
                continue
            target = None
            for k in range(len(segs), 0, -1):
                if tuple(segs[:k]) in file_of:
                    target = file_of[tuple(segs[:k])]
                    break
            if target is not None and target != f:
                graph.setdefault(f, {}).setdefault(target, line)
    return graph

def circles(graph):
    """Strongly connected components with more than one file (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph, key=str):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}), key=str)))]
        index[root] = low[root] = counter[0]; counter[0] += 1
        stack.append(root); on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]; counter[0] += 1
                    stack.append(nxt); on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {}), key=str))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(str(c) for c in comp))
    return out


files_graph = file_graph(files, sources, test_files, "src", True)
files_graph.update(file_graph(agent_files, agent_sources, agent_tests, "agent/src", False))
# Circles tolerated for a while, each as the sorted tuple of its files, with why.
ALLOWED_CIRCLES = {}
seen_circles = set()
for comp in circles(files_graph):
    key = tuple(comp)
    if key in ALLOWED_CIRCLES:
        seen_circles.add(key)
        continue
    members = set(comp)
    edges = [f"{a} -> {b} (line {l})" for a in comp for b, l in sorted(files_graph.get(pathlib.Path(a), {}).items(), key=lambda e: str(e[0])) if str(b) in members]
    violations.append("file-level circle: " + ", ".join(comp) + "\n    " + "\n    ".join(edges))
for key, why in ALLOWED_CIRCLES.items():
    if key not in seen_circles:
        violations.append(f"ALLOWED_CIRCLES entry {', '.join(key)} is no longer a circle; delete it ({why})")

for (src, target), why in ALLOWED.items():
    if (src, target) not in used:
        violations.append(f"ALLOWED entry {src} -> {target} is no longer needed; delete it ({why})")

if "--graph" in sys.argv[1:]:
    for tier in LAYERS:
        for unit in tier:
            uses = sorted(graph.get(unit, ()), key=lambda u: (TIER.get(u, 99), u))
            print(f"{unit:8} -> {', '.join(uses) if uses else '(nothing)'}")
    uses = sorted(graph.get("a2a-agent", ()), key=lambda u: (TIER.get(u, 99), u))
    print(f"a2a-agent (agent/src) -> a2a_egress::{{{', '.join(uses)}}}")

for v in sorted(set(violations)):
    print(v)
if violations:
    print(f"check-layers: {len(set(violations))} problem(s)", file=sys.stderr)
    sys.exit(1)
print(f"check-layers: no upward import ({len(ALLOWED)} known edge(s) allowed, see ALLOWED); "
      f"no file-level circle ({len(ALLOWED_CIRCLES)} known, see ALLOWED_CIRCLES)")
PY
