#!/usr/bin/env python3
"""Before/after tables from two factory-bench runs (scripts/bench.sh --before REV).

    compare.py BEFORE_DIR AFTER_DIR [CRITERION_DIR]

BEFORE_DIR holds results.json of the old driver measuring the old server (every section the
old driver has, in-process overhead included) and, if present, extra/results.json: the new
driver measuring the old server's binary on the sections the old driver lacks or measures
otherwise (run history, new fetch rows, HTTP with a client that keeps its connections), and
alone/results.json: the new driver built on the old library, for the in-process server alone
(the hand-written JSON-RPC client). AFTER_DIR holds the new driver's results.json. CRITERION_DIR (optional) is
target/criterion, for the redaction bench (old and one-pass redactor in the same run).
Prints Markdown. A figure one side lacks is shown as "–".
"""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def us(v):
    if v is None:
        return "–"
    if v >= 1e6:
        return f"{v / 1e6:.2f} s"
    if v >= 1e3:
        return f"{v / 1e3:.2f} ms"
    return f"{v:.1f} µs"


def ratio(b, a, lower_better=True):
    if b is None or a is None or a == 0 or b == 0:
        return "–"
    r = b / a if lower_better else a / b
    return f"{r:.2f}×"


def get(d, *path):
    for p in path:
        if isinstance(d, dict):
            d = d.get(p)
        elif isinstance(d, list) and isinstance(p, int) and p < len(d):
            d = d[p]
        else:
            return None
    return d


def by(items, key):
    return {i.get(key): i for i in (items or []) if isinstance(i, dict)}


def main():
    before_dir, after_dir = sys.argv[1], sys.argv[2]
    crit = sys.argv[3] if len(sys.argv) > 3 else None
    b = load(os.path.join(before_dir, "results.json"))
    bx = load(os.path.join(before_dir, "extra", "results.json"))
    balone = by(load(os.path.join(before_dir, "alone", "results.json")).get("overhead"), "op")
    a = load(os.path.join(after_dir, "results.json"))
    out = []
    w = out.append
    w("# Before / after (one run of scripts/bench.sh --before)\n")
    for label, d in (("before", b), ("after", a)):
        w(f"- {label}: load average at start {get(d, 'machine_at_start', 'loadavg')}, "
          f"at end {get(d, 'machine_at_end', 'loadavg')}")
    w("\nSpeed-up = before ÷ after (above 1 is faster). Medians unless marked p99.\n")

    bo, ao = by(b.get("overhead"), "op"), by(a.get("overhead"), "op")
    ops = list(ao) or list(bo)
    if ops:
        w("## Server work per call, in process, above the HTTP floor\n")
        w("Server alone: the same in-process server spoken to by a hand-written JSON-RPC client instead of "
          "rmcp's. The in-process columns before are this driver built on the before tree's library; where it "
          "did not build there, the old driver's, taken on its own runtime (not comparable).\n")
        w("Server's work: server alone less what the pipe and client cost with no server (the echo), "
          "from drivers that measure it; rmcp canned: rmcp's server answering the real answer, canned, "
          "above the echo.\n")
        w("| operation | floor before | floor after | overhead before | overhead after | speed-up | server alone before | server alone after | server's work before | server's work after | rmcp canned after | stdio overhead before | stdio overhead after |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for op in ops:
            x, y = bo.get(op, {}), ao.get(op, {})
            xa = balone.get(op, {})
            # In-process figures before come from this driver built on the old library (the
            # `alone` run) when there is one: the old driver measured on another runtime.
            xs = xa or x
            ob, oa = xs.get("overhead_in_process_p50_us"), y.get("overhead_in_process_p50_us")
            alone_before = xs.get("overhead_server_alone_p50_us")
            work_before = xs.get("server_work_p50_us")
            canned = get(y, "canned", "p50_us")
            echo = get(y, "echo", "p50_us")
            rmcp = canned - echo if canned is not None and echo is not None else None
            w(f"| {op} | {us(get(xs, 'floor', 'p50_us'))} | {us(get(y, 'floor', 'p50_us'))} | {us(ob)} | "
              f"**{us(oa)}** | {ratio(ob, oa)} | {us(alone_before)} | "
              f"**{us(y.get('overhead_server_alone_p50_us'))}** | {us(work_before)} | "
              f"**{us(y.get('server_work_p50_us'))}** | {us(rmcp)} | "
              f"{us(x.get('overhead_stdio_p50_us'))} | {us(y.get('overhead_stdio_p50_us'))} |")
        w("")

    bp, ap = by(b.get("per_operation"), "op"), by(a.get("per_operation"), "op")
    if ap or bp:
        w("## Tool call over stdio (warm server)\n")
        w("| operation | before p50 | after p50 | speed-up | before p99 | after p99 | requests before | requests after |")
        w("|---|---|---|---|---|---|---|---|")
        for op in list(ap) or list(bp):
            x, y = bp.get(op, {}), ap.get(op, {})
            tb, ta = get(x, "tool_stdio", "p50_us"), get(y, "tool_stdio", "p50_us")
            w(f"| {op} | {us(tb)} | **{us(ta)}** | {ratio(tb, ta)} | {us(get(x, 'tool_stdio', 'p99_us'))} | "
              f"{us(get(y, 'tool_stdio', 'p99_us'))} | {len(x.get('tool_requests') or []) or '–'} | {len(y.get('tool_requests') or []) or '–'} |")
        w("")

    cb, ca = get(b, "cold_start", "factory_mcp"), get(a, "cold_start", "factory_mcp")
    if cb or ca:
        w("## Cold start (spawn → initialize → first tools/list answer)\n")
        w("| figure | before | after | speed-up |")
        w("|---|---|---|---|")
        for k in ("p50_us", "p99_us", "min_us"):
            vb, va = get(cb, "cold_start", k), get(ca, "cold_start", k)
            w(f"| cold start {k[:-3]} | {us(vb)} | **{us(va)}** | {ratio(vb, va)} |")
        vb, va = get(cb, "get_run_call", "p50_us"), get(ca, "get_run_call", "p50_us")
        w(f"| get_run call p50 (stdio) | {us(vb)} | {us(va)} | {ratio(vb, va)} |")
        floor = get(a, "cold_start", "process_floor", "p50_us")
        if floor:
            w(f"| process floor p50 (`null-mcp`, measured in the after run) | {us(floor)} | {us(floor)} | |")
            sb, sa = get(cb, "cold_start", "p50_us"), get(ca, "cold_start", "p50_us")
            above = lambda v: v - floor if v else None
            w(f"| **above the floor** p50 | {us(above(sb))} | **{us(above(sa))}** | {ratio(above(sb), above(sa))} |")
        w("")

    hb, ha = b.get("http_throughput"), a.get("http_throughput")
    hx = bx.get("http_throughput")
    if hb or ha:
        w("## get_run over streamable HTTP\n")
        w("Before: the old driver on the old server; before\\*: the new driver (a client that keeps its "
          "connections) on the old server's binary; after: the new driver on the new server.\n")
        w("| clients | calls/s before | before\\* | calls/s after | server CPU per call before | before\\* | after | CPU speed-up (before ÷ after) |")
        w("|---|---|---|---|---|---|---|---|")
        lb, la = by(get(hb, "levels"), "clients"), by(get(ha, "levels"), "clients")
        lx = by(get(hx, "levels"), "clients")
        for n in list(la) or list(lb):
            x, y, z = lb.get(n, {}), la.get(n, {}), lx.get(n, {})
            cb_, ca_ = x.get("server_cpu_us_per_call"), y.get("server_cpu_us_per_call")
            cps_b, cps_a = x.get("calls_per_s"), y.get("calls_per_s")
            cps_x = z.get("calls_per_s")
            w(f"| {n} | {cps_b and round(cps_b) or '–'} | {cps_x and round(cps_x) or '–'} | **{cps_a and round(cps_a) or '–'}** | "
              f"{us(cb_)} | {us(z.get('server_cpu_us_per_call'))} | **{us(ca_)}** | {ratio(cb_, ca_)} |")
        # The stateless era's before: the before run's own if its driver had it, else the new
        # driver's run on the old binary.
        sx = by(get(hb, "levels_stateless") or get(hx, "levels_stateless"), "clients")
        sa = by(get(ha, "levels_stateless"), "clients")
        for n in list(sa):
            z, y = sx.get(n, {}), sa.get(n, {})
            cx, ca_ = z.get("server_cpu_us_per_call"), y.get("server_cpu_us_per_call")
            cps_x, cps_a = z.get("calls_per_s"), y.get("calls_per_s")
            w(f"| {n}, 2026-07-28 (stateless) | – | {cps_x and round(cps_x) or '–'} | **{cps_a and round(cps_a) or '–'}** | "
              f"– | {us(cx)} | **{us(ca_)}** | {ratio(cx, ca_)} (before\\* ÷ after) |")
        for k, label in (("rss_idle_kib", "RSS idle"), ("rss_peak_after_load_kib", "RSS peak after the loads (an old driver: after 64 clients)")):
            vb, va = get(hb, k), get(ha, k)
            w(f"| {label} | {vb and f'{vb / 1024:.1f} MiB' or '–'} | | {va and f'{va / 1024:.1f} MiB' or '–'} | | | | |")
        w("")

    fb = by((b.get("fetch_traces") or []) + (bx.get("fetch_traces") or []), "label")
    fa = by(a.get("fetch_traces"), "label")
    if fa or fb:
        w("## fetch_traces\n")
        w("| traces | files | time before | time after | MB/s before | MB/s after | files/s before | files/s after | peak RSS before | peak RSS after |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for label in list(fa) or list(fb):
            x, y = fb.get(label, {}), fa.get(label, {})
            def fps(r):
                return f"{r['files'] / r['secs']:.0f}" if r.get("secs") else "–"
            def rss(r):
                return f"{r['vm_hwm_kib'] / 1024:.1f} MiB" if r.get("vm_hwm_kib") else "–"
            def secs(r):
                return f"{r['secs']:.2f} s" if r.get("secs") else "–"
            def mbs(r):
                return f"{r['mb_per_s']:.0f}" if r.get("mb_per_s") else "–"
            w(f"| {label} | {y.get('files', x.get('files', '–'))} | {secs(x)} | **{secs(y)}** | {mbs(x)} | "
              f"{mbs(y)} | {fps(x)} | {fps(y)} | {rss(x)} | {rss(y)} |")
        w("")

    hb = by(b.get("history") or bx.get("history"), "runs")
    ha = by(a.get("history"), "runs")
    if ha or hb:
        w("## Run history: plan_run and launch_run against N finished runs\n")
        w("| finished runs | plan_run before | after | requests before | after | launch_run before | after | requests before | after | first plan_run requests before / after |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for n in list(ha) or list(hb):
            x, y = hb.get(n, {}), ha.get(n, {})
            w(f"| {n} | {us(get(x, 'plan_run', 'p50_us'))} | **{us(get(y, 'plan_run', 'p50_us'))}** | "
              f"{x.get('plan_run_requests', '–')} | **{y.get('plan_run_requests', '–')}** | "
              f"{us(get(x, 'launch_run', 'p50_us'))} | **{us(get(y, 'launch_run', 'p50_us'))}** | "
              f"{x.get('launch_run_requests', '–')} | **{y.get('launch_run_requests', '–')}** | "
              f"{x.get('first_plan_requests', '–')} / {y.get('first_plan_requests', '–')} |")
        w("")

    if crit and os.path.isdir(crit):
        # policies/benches/redact.rs: group "redact 1 MiB of log text, {text}", functions
        # "old" and "one-pass", parameter {text}; criterion keeps the spaces in directory names.
        def median_ns(text, impl):
            e = load(os.path.join(crit, f"redact 1 MiB of log text, {text}", impl, text, "new", "estimates.json"))
            return get(e, "median", "point_estimate")

        def mb_per_s(ns):
            return f"{(1 << 20) / (ns / 1e9) / 1e6:.0f} MB/s" if ns else "–"

        rows = []
        for text in ("clean", "hits"):
            old, new = median_ns(text, "old"), median_ns(text, "one-pass")
            if old or new:
                rows.append(f"| {text} | {mb_per_s(old)} | **{mb_per_s(new)}** | {ratio(old, new)} |")
        if rows:
            w("## Redaction, 1 MiB of log text (criterion, old and new redactor in the same run)\n")
            w("| text | old | new | speed-up |")
            w("|---|---|---|---|")
            out.extend(rows)
            w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
