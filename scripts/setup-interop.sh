#!/usr/bin/env bash
# Installs the peers our interoperability tests drive, into .interop/ (ignored by git):
#   - a Python venv with the official `prime` CLI 0.18.0 and the Python `mcp` SDK 2.3.0
#   - Node 22 (the npm package `node`, into .interop/node): the machine's Node 20 is too old
#     for the Inspector 2.x line
#   - the MCP Inspector CLI (`@modelcontextprotocol/inspector`, pinned, with `--strict`), into
#     .interop/inspector, installed by npm running on that Node 22 (on Node 20, npm silently
#     resolves an old 0.x Inspector without `--strict`)
#   - `oidc-provider` (pinned), into .interop/oidc with that same npm: the authorization server
#     tests/gateway_oauth.rs starts on loopback (tests/oidc/provider.mjs)
# Idempotent: each part has a stamp file holding what it installed; a second run only checks
# what is there. Needs PyPI and the npm registry.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.interop"
mkdir -p "$dir"

# Python: prime CLI + mcp SDK.
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
"$venv/bin/python" -c 'import mcp' >/dev/null
echo "interop: $("$venv/bin/prime" --version 2>/dev/null | head -1) in $venv" >&2

# Quiet, non-interactive npm that touches nothing outside .interop/ (its cache aside).
npm_quiet=(--no-audit --no-fund --no-update-notifier --loglevel=error --no-package-lock)

# Node 22 from the npm registry.
node_version="22.23.3"
node_dir="$dir/node"
node_bin="$node_dir/node_modules/.bin"
node_stamp="$node_dir/.factory-mcp-stamp"
if [[ ! -f "$node_stamp" || "$(cat "$node_stamp")" != "node@$node_version" ]]; then
  rm -rf "$node_dir"
  mkdir -p "$node_dir"
  npm install "${npm_quiet[@]}" --prefix "$node_dir" "node@$node_version" >/dev/null
  echo "node@$node_version" > "$node_stamp"
fi
got="$("$node_bin/node" --version)"
if [[ "$got" != "v$node_version" ]]; then
  echo "interop: expected Node v$node_version in $node_bin, found $got" >&2
  exit 1
fi

# The Inspector, installed and run with Node 22 first on PATH.
inspector_version="2.12.0"
insp_dir="$dir/inspector"
insp_pkg="$insp_dir/node_modules/@modelcontextprotocol/inspector"
insp_stamp="$insp_dir/.factory-mcp-stamp"
want_insp="@modelcontextprotocol/inspector@$inspector_version node@$node_version"
if [[ ! -f "$insp_stamp" || "$(cat "$insp_stamp")" != "$want_insp" ]]; then
  rm -rf "$insp_dir"
  mkdir -p "$insp_dir"
  PATH="$node_bin:$PATH" npm install "${npm_quiet[@]}" --prefix "$insp_dir" \
    "@modelcontextprotocol/inspector@$inspector_version" >/dev/null
  echo "$want_insp" > "$insp_stamp"
fi
got="$(PATH="$node_bin:$PATH" node -p "require('$insp_pkg/package.json').version")"
if [[ "$got" != "$inspector_version" ]]; then
  echo "interop: expected Inspector $inspector_version in $insp_dir, found $got" >&2
  exit 1
fi
help="$(PATH="$node_bin:$PATH" "$insp_dir/node_modules/.bin/mcp-inspector" --cli --help 2>&1 || true)"
if [[ "$help" != *--strict* ]]; then
  echo "interop: the Inspector in $insp_dir has no --strict flag" >&2
  exit 1
fi
echo "interop: Node $("$node_bin/node" --version), Inspector $inspector_version in $insp_dir" >&2

# oidc-provider (and jose, its dependency, which the provider script also uses to mint tokens).
oidc_version="9.13.3"
oidc_dir="$dir/oidc"
oidc_stamp="$oidc_dir/.factory-mcp-stamp"
want_oidc="oidc-provider@$oidc_version node@$node_version"
if [[ ! -f "$oidc_stamp" || "$(cat "$oidc_stamp")" != "$want_oidc" ]]; then
  rm -rf "$oidc_dir"
  mkdir -p "$oidc_dir"
  PATH="$node_bin:$PATH" npm install "${npm_quiet[@]}" --prefix "$oidc_dir" \
    "oidc-provider@$oidc_version" >/dev/null
  echo "$want_oidc" > "$oidc_stamp"
fi
got="$(PATH="$node_bin:$PATH" node -p "require('$oidc_dir/node_modules/oidc-provider/package.json').version")"
if [[ "$got" != "$oidc_version" ]]; then
  echo "interop: expected oidc-provider $oidc_version in $oidc_dir, found $got" >&2
  exit 1
fi
echo "interop: oidc-provider $oidc_version in $oidc_dir" >&2
