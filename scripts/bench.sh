#!/usr/bin/env bash
# The one benchmark command (docs/BENCHMARKS.md). Not run by CI.
#
#   scripts/bench.sh            # the full run (~10 min of measuring on 2 cores; 2.3 GB of scratch writes, 1.1 GB at once)
#   scripts/bench.sh --quick    # a smoke run: few samples, no 1 GiB fetch
#   scripts/bench.sh --no-fetch # skip fetch_traces
#   scripts/bench.sh --before REV  # also build REV and report before/after columns (REV's
#                                  # driver, this driver built on REV's library, and both
#                                  # servers over stdio sample by sample: --versus)
#   scripts/bench.sh --before REV --pairs N  # then N alternating runs of each side's in-process
#                                  # figures (--only operations), medians in target/bench/pairs.md
#
# It installs what it compares against (idempotent): the `prime` CLI 0.18.0 venv through
# scripts/setup-interop.sh, and FastMCP 4.1.6 in its own venv .interop/bench-venv; builds the
# release `factory-mcp` and the `factory-bench` driver (bench/); runs criterion's
# `config/benches/validate.rs`, `policies/benches/redact.rs` and `platform/benches/metrics.rs`;
# then runs factory-bench, which starts the sandbox (loopback,
# manual clock, scripts/bench/seed.json) and prints the Markdown report, also written to
# target/bench/report.md with the raw figures in target/bench/results.json.
#
# Run it on a quiet machine: the figures are latencies on shared cores. It prints the load
# average before starting, and the report carries it at start and end.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
interop="$root/.interop"

# --before REV: build REV (a commit or branch of this repository) beside the working tree and
# measure it in the same run, then write target/bench/compare.md with before/after columns.
before=""
pairs=""
driver_on_before=""
args=()
while (($#)); do
  case "$1" in
    --before) before="${2:?--before needs a revision}"; shift 2 ;;
    --before=*) before="${1#--before=}"; shift ;;
    --pairs) pairs="${2:?--pairs needs a number of pairs}"; shift 2 ;;
    --pairs=*) pairs="${1#--pairs=}"; [[ -n "$pairs" ]] || pairs=invalid; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ -n "$pairs" ]]; then
  if [[ -z "$before" ]]; then
    echo "bench: --pairs compares with a before tree: give --before REV too" >&2
    exit 2
  fi
  if ! [[ "$pairs" =~ ^[1-9][0-9]?$ ]]; then
    echo "bench: --pairs takes a number of pairs from 1 to 99, not '$pairs'" >&2
    exit 2
  fi
fi

echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPU(s)" >&2

# The prime CLI (and the Python mcp SDK) for the comparison.
if [[ ! -x "$interop/venv/bin/prime" ]]; then
  scripts/setup-interop.sh
fi

# FastMCP, pinned, in its own venv so the interop venv used by tests stays as it is.
fastmcp_venv="$interop/bench-venv"
want="fastmcp==4.1.6"
if [[ ! -f "$fastmcp_venv/.factory-mcp-stamp" || "$(cat "$fastmcp_venv/.factory-mcp-stamp")" != "$want" ]]; then
  rm -rf "$fastmcp_venv"
  python3 -m venv "$fastmcp_venv"
  "$fastmcp_venv/bin/pip" install --quiet --disable-pip-version-check "$want"
  echo "$want" > "$fastmcp_venv/.factory-mcp-stamp"
fi
"$fastmcp_venv/bin/python" -c 'import fastmcp, sys; assert fastmcp.__version__ == "4.1.6", fastmcp.__version__'

# Release builds of exactly what is measured. Two invocations, so the server binary is built
# with the feature set it ships with (the driver adds rmcp's client features).
cargo build --release --quiet -p factory-mcp
cargo build --release --quiet -p factory-bench

# In-process: criterion (config validation). Short runs; the medians land in target/criterion.
cargo bench --quiet -p factory-config --bench validate -- --warm-up-time 1 --measurement-time 3 >&2

# The redactor, old (kept test-only while both exist) and one-pass, on 1 MiB of log text; an
# answer's tree with its strings searched together and each on its own.
cargo bench --quiet -p factory-policies --bench redact -- --warm-up-time 1 --measurement-time 3 >&2

# Reading a metrics answer as get_metrics does (decode, every record checked, its fields read).
cargo bench --quiet -p factory-platform --bench metrics -- --warm-up-time 1 --measurement-time 3 >&2

if [[ -n "$before" ]]; then
  # The old tree's release server and driver, built in their own target directory (kept
  # between runs so a second comparison against the same revision rebuilds little).
  bdir="$root/target/bench-before"
  rev="$(git rev-parse --verify "$before^{commit}")"
  echo "bench: building the before tree $rev" >&2
  rm -rf "$bdir/src"
  mkdir -p "$bdir/src"
  git archive "$rev" | tar -x -C "$bdir/src"
  (cd "$bdir/src" && CARGO_TARGET_DIR="$bdir/target" cargo build --release --quiet -p factory-mcp \
    && CARGO_TARGET_DIR="$bdir/target" cargo build --release --quiet -p factory-bench)
  old_args=()
  for a in "${args[@]}"; do [[ "$a" == --no-fetch ]] || old_args+=("$a"); done
  # The old driver measures the old server: every section it has, in-process overhead with
  # the old code included. Traces are fetched by the new driver for both binaries below.
  "$bdir/target/release/factory-bench" \
    --server "$bdir/target/release/factory-mcp" \
    --seed "$bdir/src/scripts/bench/seed.json" \
    --scripts "$bdir/src/scripts/bench" \
    --prime "$interop/venv/bin/prime" \
    --fastmcp-python "$fastmcp_venv/bin/python" \
    --out target/bench/before \
    --no-fetch \
    "${old_args[@]}" > /dev/null
  # The new driver built on the old tree's library (its bench/ replaced by this one), for the
  # in-process figures both sides must be measured the same way: the server alone, spoken to
  # by the hand-written JSON-RPC client. Built in the same target directory after the old
  # driver has run (only the workspace's crates rebuild); skipped, with a note, when this
  # driver does not build against the old library. Only the driver: `canned-http`, the HTTP
  # transport around a canned answer, is this tree's (step 2 runs it).
  rm -rf "$bdir/src-driver"
  cp -r "$bdir/src" "$bdir/src-driver"
  rm -rf "$bdir/src-driver/bench"
  cp -r bench "$bdir/src-driver/bench"
  # A tree older than the line transport `serve` uses over stdio (server/src/lines.rs) served
  # over rmcp's own: the driver's in-process servers do the same there (bench/Cargo.toml).
  driver_features=()
  [[ -f "$bdir/src-driver/server/src/lines.rs" ]] || driver_features=(--no-default-features)
  if (cd "$bdir/src-driver" && CARGO_TARGET_DIR="$bdir/target" cargo build --release --quiet -p factory-bench --bin factory-bench "${driver_features[@]}"); then
    driver_on_before=1
    "$bdir/target/release/factory-bench" \
      --server "$bdir/target/release/factory-mcp" \
      --seed scripts/bench/seed.json \
      --scripts scripts/bench \
      --out target/bench/before/alone \
      --only operations \
      "${old_args[@]}" > /dev/null
  else
    echo "bench: this driver does not build against $rev; the server-alone before stays empty" >&2
  fi
  # The new driver measures the old binary on what only it knows or measures otherwise (run
  # history, fetch rows, HTTP with a client that keeps its connections): whole-process
  # figures, so the driver's own version does not enter them.
  target/release/factory-bench \
    --server "$bdir/target/release/factory-mcp" \
    --seed scripts/bench/seed.json \
    --scripts scripts/bench \
    --out target/bench/before/extra \
    --only history,fetch,http \
    "${args[@]}" > /dev/null
fi

target/release/factory-bench \
  --server target/release/factory-mcp \
  --seed scripts/bench/seed.json \
  --scripts scripts/bench \
  --prime "$interop/venv/bin/prime" \
  --fastmcp-python "$fastmcp_venv/bin/python" \
  --criterion-dir target/criterion \
  --out target/bench \
  "${args[@]}"

if [[ -n "$before" ]]; then
  # The two servers over stdio, sample by sample (A: before, B: after), in 12 fresh launches
  # (docs/BENCHMARKS.md: the noise of this method was measured with 12): differences of a few
  # µs that runs of each build one after the other cannot resolve. Its failure (an old server
  # that lacks an operation) leaves the rest of the report.
  versus_args=()
  for a in "${args[@]}"; do [[ "$a" == --quick ]] && versus_args+=(--quick); done
  rm -rf target/bench/versus
  if ! target/release/factory-bench \
    --server "$bdir/target/release/factory-mcp" \
    --versus target/release/factory-mcp \
    --versus-launches 12 \
    --seed scripts/bench/seed.json \
    --scripts scripts/bench \
    --out target/bench/versus \
    "${versus_args[@]}" > /dev/null; then
    echo "bench: the sample-by-sample comparison (--versus) failed; the rest of the report stands" >&2
  fi
  python3 scripts/bench/compare.py target/bench/before target/bench target/criterion > target/bench/compare.md
  cat target/bench/compare.md
  if [[ -f target/bench/versus/versus.md ]]; then
    cat target/bench/versus/versus.md
    echo "bench: wrote target/bench/compare.md and target/bench/versus/versus.md (before: $rev)" >&2
  else
    echo "bench: wrote target/bench/compare.md (before: $rev)" >&2
  fi
fi

# --pairs N: one run of each side is at the mercy of the host (on shared cores a figure swings
# by tens of µs from one run of the same build to the next). Alternate N pairs of runs of the
# in-process figures, both sides through this driver (on the before side built on the old
# library, as in the `alone` run above), the order turned round every other pair (before then
# after, after then before, …) so that whatever favours a pair's first or second run falls on
# both sides alike; then report medians, ranges and how many pairs moved each way
# (scripts/bench/pairs.py).
if [[ -n "$pairs" ]]; then
  if [[ -z "$driver_on_before" ]]; then
    echo "bench: this driver does not build against $rev: no alternating pairs" >&2
  else
    rm -rf target/bench/pairs
    mkdir -p target/bench/pairs
    for ((i = 1; i <= pairs; i++)); do
      echo "bench: pair $i of $pairs (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
      order=(before after)
      ((i % 2)) || order=(after before)
      for side in "${order[@]}"; do
        if [[ "$side" == before ]]; then
          "$bdir/target/release/factory-bench" \
            --server "$bdir/target/release/factory-mcp" \
            --seed scripts/bench/seed.json \
            --scripts scripts/bench \
            --out "target/bench/pairs/before-$i" \
            --only operations > /dev/null
        else
          target/release/factory-bench \
            --server target/release/factory-mcp \
            --seed scripts/bench/seed.json \
            --scripts scripts/bench \
            --out "target/bench/pairs/after-$i" \
            --only operations > /dev/null
        fi
      done
    done
    python3 scripts/bench/pairs.py target/bench/pairs > target/bench/pairs.md
    cat target/bench/pairs.md
    echo "bench: wrote target/bench/pairs.md ($pairs pairs, before: $rev)" >&2
  fi
fi
