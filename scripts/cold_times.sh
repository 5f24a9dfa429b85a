#!/usr/bin/env bash
# Times the README's first command and its test command from cold: a fresh target
# directory, dependencies already downloaded (as after `cargo fetch`). Prints one line each.
# Usage: scripts/cold_times.sh [first|tests|both]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-both}
cargo fetch --quiet
run() {
  local label=$1; shift
  local target
  target=$(mktemp -d /tmp/cairnloop-cold.XXXXXX)
  local start end
  start=$(date +%s)
  if ! CARGO_TARGET_DIR="$target" "$@" >"$target.log" 2>&1; then
    tail -n 30 "$target.log" >&2
    echo "cold_times.sh: $label failed" >&2
    rm -rf "$target"
    exit 1
  fi
  end=$(date +%s)
  rm -f "$target.log"
  rm -rf "$target"
  printf '%-60s %4d s\n' "$label" "$((end - start))"
}
if [ "$what" = first ] || [ "$what" = both ]; then
  run "cargo run --example support_desk (cold)" cargo run --quiet --example support_desk
fi
if [ "$what" = tests ] || [ "$what" = both ]; then
  run "scripts/with_postgres.sh cargo test --workspace --all-features (cold)" \
    scripts/with_postgres.sh cargo test --workspace --all-features
fi
