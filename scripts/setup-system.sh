#!/usr/bin/env bash
# System packages the tests drive (idempotent; called by scripts/test.sh, so the README's test
# command works on a fresh Debian machine): headless Chromium and chromedriver for the approval
# page's browser test (tests/e2e_page.rs); useradd/userdel (passwd) and runuser (util-linux) for
# the two-user recipe test (tests/privilege_separation.rs, which runs as root, as CI does);
# PostgreSQL (initdb, pg_ctl, psql; found with `pg_config --bindir`) for the shared-store tests
# (tests/store_backends.rs, tests/gateway_replicas.rs), which start their own server in a temp
# directory as the `postgres` user the package creates.
set -euo pipefail
want=()
command -v chromium >/dev/null 2>&1 || want+=(chromium)
command -v chromedriver >/dev/null 2>&1 || want+=(chromium-driver)
command -v useradd >/dev/null 2>&1 || want+=(passwd)
command -v runuser >/dev/null 2>&1 || want+=(util-linux)
command -v pg_config >/dev/null 2>&1 || want+=(postgresql)
if ((${#want[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${want[@]}"
fi
