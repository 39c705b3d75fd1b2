#!/usr/bin/env bash
# The longer fuzz run (issue 9 §2): the proptest targets with many more cases than CI's.
#
#   scripts/fuzz.sh                 # 20000 cases per raisable target, 20 rounds of the others
#   FUZZ_CASES=100000 FUZZ_ROUNDS=100 scripts/fuzz.sh
#
# CI runs every target with its default count (256, or the count fixed in the file) as part of
# `cargo test`. Debug build, one target at a time (the build machine is shared); no --release.
set -euo pipefail
cd "$(dirname "$0")/.."
CASES="${FUZZ_CASES:-20000}"
ROUNDS="${FUZZ_ROUNDS:-20}"

# Targets whose case count follows PROPTEST_CASES.
raisable=(
  "-p factory-policies --test fuzz_guard"   # secret guard: JSON trees, text, TOML, env lists
  "-p factory-tools --test fuzz_args"       # tool-argument parsing through the real handler
)
# Targets with a case count fixed in the file (re-run with fresh random seeds instead).
fixed=(
  "-p factory-config --test no_panic:400"   # config validator: random and mutated TOML
  "-p factory-policies --test redact:256"   # redactor: known values in every encoded form
)

start=$(date +%s)
for t in "${raisable[@]}"; do
  echo "== $t: PROPTEST_CASES=$CASES"
  # shellcheck disable=SC2086
  PROPTEST_CASES="$CASES" cargo test $t -- --test-threads 1
done
for entry in "${fixed[@]}"; do
  t="${entry%%:*}"; per="${entry##*:}"
  echo "== $t: $ROUNDS rounds x $per cases per property"
  for _ in $(seq "$ROUNDS"); do
    # shellcheck disable=SC2086
    cargo test -q $t >/dev/null
  done
done
echo "fuzz: done in $(( $(date +%s) - start )) s (raisable: $CASES cases per property; fixed: $ROUNDS rounds)"
