#!/usr/bin/env bash
# The one benchmark command (docs/BENCHMARKS.md). Not run by CI.
#
#   scripts/bench.sh            # the full run (~8 min of measuring on 2 cores; 2.3 GB of scratch writes, 1.1 GB at once)
#   scripts/bench.sh --quick    # a smoke run: few samples, no 1 GiB fetch
#   scripts/bench.sh --no-fetch # skip fetch_traces
#
# It installs what it compares against (idempotent): the `prime` CLI 0.18.0 venv through
# scripts/setup-interop.sh, and FastMCP 4.1.6 in its own venv .interop/bench-venv; builds the
# release `factory-mcp` and the `factory-bench` driver (bench/); runs criterion's
# `config/benches/validate.rs`; then runs factory-bench, which starts the sandbox (loopback,
# manual clock, scripts/bench/seed.json) and prints the Markdown report, also written to
# target/bench/report.md with the raw figures in target/bench/results.json.
#
# Run it on a quiet machine: the figures are latencies on shared cores. It prints the load
# average before starting, and the report carries it at start and end.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
interop="$root/.interop"

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

exec target/release/factory-bench \
  --server target/release/factory-mcp \
  --seed scripts/bench/seed.json \
  --scripts scripts/bench \
  --prime "$interop/venv/bin/prime" \
  --fastmcp-python "$fastmcp_venv/bin/python" \
  --criterion-dir target/criterion \
  --out target/bench \
  "$@"
