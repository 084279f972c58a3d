#!/usr/bin/env bash
# Fails when a function in src/ or agent/src/ (the gateway's and the reference agent's crates) is
# longer than a reader can hold in their head.
#
# The limit is 80 lines per function (MAX_FN_LINES, default 80), counted from the line of `fn`
# to the line of the body's closing brace, doc comments and attributes not included. Closures
# count towards the function they are written in; a nested `fn` counts towards its parent and on
# its own. Test modules are included: a test is read as often as the code it checks.
#
# ALLOWED names the functions over the limit on purpose: two table-driven tests whose body is a
# table of cases, one row per classification rule, read row by row rather than held whole. A new
# offender fails, and so does an entry that is no longer needed (delete it when the function is
# split).
#
# It also fails on a `sleep` in test code (tests/, and src/ below a `#[cfg(test)]` or in a
# `tests.rs`) outside SLEEP_ALLOWED: a test that sleeps on real time and then asserts usually
# asserts something that would also hold had nothing happened, and is slow. Wait for an event
# or a metric (`assert_eventually!`), or run on paused time: a function marked
# `#[tokio::test(start_paused = true)]` may sleep, since its sleeps only let virtual time pass.
#
# Usage: scripts/check-structure.sh [MAX_FN_LINES]   (prints each offender as path:line name lines)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

exec python3 - "${1:-80}" <<'PY'
import pathlib
import re
import sys

limit = int(sys.argv[1])

# (file, function): why it stays longer.
ALLOWED = {
    ("src/lock/diff/tests.rs", "every_rule_against_the_lock"): "a table of cases, one row per rule",
    ("src/lock/diff/tests.rs", "every_rule_between_two_profiles_without_a_lock"): "a table of cases, one row per rule",
}
# (file, function): why it sleeps on real time. Each is a pause that is not followed by a
# negative assertion, or the thing under test is a wait itself.
SLEEP_ALLOWED = {
    ("tests/integration/common/eventually.rs", "pause"): "the poll interval of assert_eventually! itself",
    ("tests/integration/common/eventually.rs", "pause_blocking"): "the poll interval of eventually_blocking itself",
    ("tests/integration/control_scheduler.rs", "fetch"): "a scripted slow fetch, run only by paused-time tests",
    ("src/proxy/keep_warm.rs", "warm_thread_becomes"): "the bounded poll for a std thread appearing in /proc (no runtime whose time could be paused)",
}
SLEEP = re.compile(r"\bsleep\s*\(")
FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
                r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_mask(text):
    """The text with comments, string and char literals blanked (newlines kept), so braces
    inside them do not count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 300]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def spans(masked):
    """(start, end, name) of every function with a body, 0-based lines."""
    out = []
    for start, line in enumerate(masked):
        m = FN.match(line)
        if not m:
            continue
        depth, opened, end = 0, False, None
        for k in range(start, len(masked)):
            for ch in masked[k]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    end = -1  # a declaration without a body
                    break
                if opened and depth == 0:
                    end = k
                    break
            if end is not None:
                break
        if end is None or end < 0:
            continue
        out.append((start, end, m.group(1)))
    return out


def paused(masked, start):
    """Whether the attributes above line `start` run the function on paused time."""
    k = start - 1
    while k >= 0 and (masked[k].strip().startswith("#[") or not masked[k].strip()):
        if "start_paused" in masked[k]:
            return True
        k -= 1
    return False


offenders, sleepers = [], []
files = [f for d in ("src", "agent/src", "tests", "agent/tests") for f in sorted(pathlib.Path(d).rglob("*.rs"))]
for path in files:
    raw = path.read_text()
    masked = code_mask(raw).split("\n")
    found = spans(masked)
    if str(path).startswith(("src/", "agent/src/")):
        for start, end, name in found:
            if end - start + 1 > limit:
                offenders.append((str(path), start + 1, name, end - start + 1))
    # Test code: all of tests/, a `tests.rs`, or what follows a `#[cfg(test)]` in src/.
    if str(path).startswith(("tests/", "agent/tests/")) or path.name == "tests.rs":
        test_from = 0
    else:
        marks = [i for i, l in enumerate(masked) if l.strip() == "#[cfg(test)]"]
        test_from = marks[0] if marks else len(masked)
    for i in range(test_from, len(masked)):
        if not SLEEP.search(masked[i]):
            continue
        inner = [f for f in found if f[0] <= i <= f[1]]
        if not inner:
            continue
        start, _, name = max(inner)
        if paused(masked, start):
            continue
        sleepers.append((str(path), i + 1, name))

problems, seen = [], set()
for path, line, name, lines in offenders:
    if (path, name) in ALLOWED:
        seen.add((path, name))
        continue
    problems.append(f"{path}:{line} {name} {lines} lines")
if limit == 80:
    for (path, name), who in ALLOWED.items():
        if (path, name) not in seen:
            problems.append(f"ALLOWED entry {path} {name} ({who}) is no longer needed; delete it")
used = set()
for path, line, name in sleepers:
    if (path, name) in SLEEP_ALLOWED:
        used.add((path, name))
        continue
    problems.append(f"{path}:{line} {name} sleeps on real time in a test (wait for an event, "
                    f"a metric or use paused time; or add it to SLEEP_ALLOWED with a reason)")
for (path, name), why in SLEEP_ALLOWED.items():
    if (path, name) not in used:
        problems.append(f"SLEEP_ALLOWED entry {path} {name} ({why}) no longer sleeps; delete it")
for p in problems:
    print(p)
if problems:
    print(f"check-structure: {len(problems)} problem(s) (functions over {limit} lines, "
          f"real-time sleeps in tests)", file=sys.stderr)
    sys.exit(1)
print(f"check-structure: every function in src/ and agent/src/ is at most {limit} lines, "
      f"{len(seen)} known one(s) aside (see ALLOWED); no test sleeps on real time, "
      f"{len(used)} known one(s) aside (see SLEEP_ALLOWED)")
PY
