#!/usr/bin/env bash
# Installs the peers our interoperability tests drive, into .interop/ (ignored by git):
#   - a Python venv with the official `prime` CLI 0.18.0 and the Python `mcp` SDK 2.3.0
# Idempotent: a second run only checks what is there. Needs PyPI (and, later, npm).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.interop"
mkdir -p "$dir"
venv="$dir/venv"
stamp="$venv/.factory-mcp-stamp"
want="prime==0.18.0 mcp==2.3.0"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $want
  echo "$want" > "$stamp"
fi
"$venv/bin/prime" --version >/dev/null
echo "interop: $("$venv/bin/prime" --version 2>/dev/null | head -1) in $venv" >&2
