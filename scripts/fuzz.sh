#!/usr/bin/env bash
# Runs fuzz targets for SECONDS each (default 60) on the stable toolchain, without a
# sanitizer (`-s none`), starting from the committed seeds in fuzz/corpus/. Exits non-zero
# as soon as a target fails: a crash, a failed assertion, or a build that does not work.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(by_name_call parse_names canonical_json device_call)
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p fuzz/target
for target in "${targets[@]}"; do
  echo "==> $target for ${seconds}s"
  # A scratch corpus, so that the committed seeds stay the small set they are.
  work="fuzz/target/corpus/$target"
  mkdir -p "$work"
  cp -n fuzz/corpus/"$target"/* "$work"/ 2>/dev/null || true
  log="fuzz/target/$target.log"
  status=0
  cargo fuzz run -s none --fuzz-dir fuzz "$target" "$work" -- \
    -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|Done|==|SUMMARY)" "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "fuzz target $target failed (exit $status); the log is $log" >&2
    tail -n 40 "$log" >&2
    exit "$status"
  fi
done
