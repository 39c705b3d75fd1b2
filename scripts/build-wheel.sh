#!/usr/bin/env bash
# Builds the Python wheel that carries the `factory-mcp` binary (pyproject.toml, maturin with
# `bindings = "bin"`) into target/wheels/, for tests/wheel.rs to install into a fresh venv.
# maturin comes from PyPI, pinned, into .interop/maturin (ignored by git; a stamp file makes a
# second run only check it), with the Python `jsonschema` validator tests/registry.rs uses.
# `--profile dev` builds in target/debug with the same profile as `cargo test`; crates whose
# features differ between the binary alone and the test build are compiled a second time.
# Nothing is uploaded.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="$root/.interop/maturin"
want="maturin==1.16.0 jsonschema==4.26.0"
stamp="$venv/.factory-mcp-stamp"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$stamp"
fi
# Beside the build's own target directory, where tests/wheel.rs looks for it. Only this
# version's wheel stays, so the test cannot pick up a stale one.
out="${CARGO_TARGET_DIR:-$root/target}/wheels"
rm -f "$out"/factory_mcp-*.whl
"$venv/bin/maturin" build --profile dev --out "$out" "$@" >&2
ls "$out"/factory_mcp-*.whl
