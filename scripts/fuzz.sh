#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60) on the stable toolchain, without
# a sanitizer (`-s none`), starting from the committed seeds in fuzz/corpus/.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
for target in by_name_call parse_names canonical_json; do
  echo "==> $target for ${seconds}s"
  # A scratch corpus, so that the committed seeds stay the small set they are.
  work="fuzz/target/corpus/$target"
  mkdir -p "$work"
  cp -n fuzz/corpus/"$target"/* "$work"/ 2>/dev/null || true
  cargo fuzz run -s none --fuzz-dir fuzz "$target" "$work" -- \
    -max_total_time="$seconds" -print_final_stats=1 2>&1 |
    grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|Done|==|SUMMARY)" || true
  # cargo fuzz exits non-zero on a crash; pipefail carries it here.
done
