#!/usr/bin/env python3
"""Medians of alternating before/after runs (scripts/bench.sh --before REV --pairs N).

    pairs.py PAIRS_DIR

PAIRS_DIR holds before-1 … before-N and after-1 … after-N, each a factory-bench
`--only operations` run (results.json), pair i taken one run after the other, before first in
odd pairs and after first in even ones (so what favours a pair's first or second run falls on
both sides alike), with the same driver on both sides (the before side is this driver built on
the old library), so the in-process figures are measured the same way. One run of each side is
at the mercy of the host: on shared cores a single run's figure swings by tens of µs between
runs of one build. Alternating runs and taking medians puts both builds through the same
spells, and "pairs where after is lower" says whether a difference holds pair by pair or only
in the medians. Identical builds on both sides (before = after) give the method's own noise:
docs/BENCHMARKS.md has such a run.

Prints Markdown: per operation, the server's work (server alone − floor − echo; list runs
against the floor in the tool's order, where the run has it; that order is this driver's, so an
older tool that made the requests one after another is read on the line against the floor one by
one), rmcp's share (canned − echo) and the cold start, as medians with their ranges. On a before
tree older than the line transport (server/src/lines.rs) the before side's servers run over
rmcp's own transport, as that tree's `serve` did, so rmcp's share is not like for like there.
Nothing here is asserted.
"""
import json
import os
import re
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def runs(pairs_dir, side):
    """The side's results in run order (before-1, before-2, …): a missing or unreadable run
    is left out, and its pair with it."""
    found = {}
    for name in os.listdir(pairs_dir):
        m = re.fullmatch(rf"{side}-(\d+)", name)
        if m:
            found[int(m.group(1))] = load(os.path.join(pairs_dir, name, "results.json"))
    return found


def server_work(row):
    """The server's work of one operation: against the floor in the tool's own order where
    the driver measured one (list runs), else against the floor of its requests one by one."""
    v = row.get("server_work_tool_order_p50_us")
    return v if v is not None else row.get("server_work_p50_us")


def rmcp_share(row):
    canned = (row.get("canned") or {}).get("p50_us")
    echo = (row.get("echo") or {}).get("p50_us")
    return canned - echo if canned is not None and echo is not None else None


def cold_start(results):
    return (((results.get("cold_start") or {}).get("factory_mcp") or {}).get("cold_start")
            or {}).get("p50_us")


def figures(results):
    """{figure name: µs} of one run."""
    out = {}
    for row in results.get("overhead") or []:
        op = row.get("op")
        if not op:
            continue
        out[(op, "server's work")] = server_work(row)
        if row.get("server_work_tool_order_p50_us") is not None:
            # The order is this driver's tool's (the after side's): an older tool that made
            # its requests one after another is judged against this floor instead.
            out[(op, "server's work, floor one by one")] = row.get("server_work_p50_us")
        out[(op, "rmcp's share")] = rmcp_share(row)
    out[("cold start", "p50")] = cold_start(results)
    return {k: v for k, v in out.items() if v is not None}


def us(v):
    return "–" if v is None else f"{v:.1f}"


def load_1min(results, key):
    """The 1-minute load average a run recorded at its start or end, or None."""
    try:
        return float(((results.get(key) or {}).get("loadavg") or "").split()[0])
    except (IndexError, ValueError):
        return None


def main():
    pairs_dir = sys.argv[1]
    before, after = runs(pairs_dir, "before"), runs(pairs_dir, "after")
    both = sorted(i for i in before if i in after and before[i] and after[i])
    if not both:
        print(f"pairs.py: no complete before/after pair in {pairs_dir}", file=sys.stderr)
        return 1
    missing = sorted(i for i in set(before) | set(after) if i not in both)
    fb = [figures(before[i]) for i in both]
    fa = [figures(after[i]) for i in both]
    loads = [v for i in both for r in (before[i], after[i])
             for v in (load_1min(r, "machine_at_start"), load_1min(r, "machine_at_end"))
             if v is not None]
    out = [f"# Alternating runs: {len(both)} pair(s), the order turned round every other pair; "
           "medians [ranges] in µs\n"]
    if loads:
        out.append(f"Load average (1 min) at the start and end of each run: "
                   f"{min(loads):.2f}–{max(loads):.2f}.\n")
    if missing:
        out.append(f"Left out, a side missing or unreadable: pair(s) {', '.join(map(str, missing))} "
                   "(the order of the rest is no longer balanced).\n")
    out += ["| operation | figure | before | after | after − before, paired (median) | pairs where after is lower |",
            "|---|---|---|---|---|---|"]
    keys = [k for k in fa[0] if all(k in f for f in fa + fb)]
    for key in keys:
        xs = [f[key] for f in fb]
        ys = [f[key] for f in fa]
        mb, ma = statistics.median(xs), statistics.median(ys)
        diff = statistics.median(y - x for x, y in zip(xs, ys))
        lower = sum(1 for x, y in zip(xs, ys) if y < x)
        out.append(f"| {key[0]} | {key[1]} | {us(mb)} [{us(min(xs))}–{us(max(xs))}] | "
                   f"**{us(ma)}** [{us(min(ys))}–{us(max(ys))}] | {diff:+.1f} | "
                   f"{lower} of {len(both)} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
