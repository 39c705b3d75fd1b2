#!/usr/bin/env bash
# The project's test command (README): sets up the interoperability peers, then runs every
# test of the workspace — unit, golden, end-to-end, and the official-CLI fidelity tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup-interop.sh"
export FACTORY_MCP_INTEROP_DIR="$root/.interop"
cargo test --workspace "$@"
