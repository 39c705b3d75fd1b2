#!/usr/bin/env bash
# The project's test command (README): installs the system packages the tests drive
# (scripts/setup-system.sh: Chromium, chromedriver, useradd/runuser), sets up the
# interoperability peers, then runs every test of the workspace — unit, golden, end-to-end, and the official-CLI fidelity tests. The
# Python wheel is built first (same target dir and dev profile as the tests), so the two builds do
# not fight over target/ and tests/wheel.rs can install it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup-system.sh"
"$root/scripts/setup-interop.sh"
export FACTORY_MCP_INTEROP_DIR="$root/.interop"
"$root/scripts/build-wheel.sh"
cargo test --workspace "$@"
