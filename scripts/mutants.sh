#!/usr/bin/env bash
# Mutation testing of src/ with cargo-mutants (configuration: .cargo/mutants.toml).
# Fails when a mutant survives that mutants-allowed.txt does not list with a reason.
# Usage: scripts/mutants.sh [extra cargo-mutants arguments, e.g. --file src/spec.rs]
set -uo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
out=target/mutants
mkdir -p "$out"  # cargo-mutants does not create the parent on a clean checkout
cargo mutants --output "$out" --no-shuffle "$@"
status=$?
missed="$out/mutants.out/missed.txt"
[ -f "$missed" ] || { echo "cargo-mutants produced no results (exit $status)"; exit 1; }
# mutants-allowed.txt: one mutant per line as cargo-mutants names it, then `  # reason`.
unexplained=$(grep -v -x -F -f <(sed -e 's/[[:space:]]*#.*$//' -e '/^$/d' mutants-allowed.txt) "$missed" || true)
caught=$(wc -l < "$out/mutants.out/caught.txt")
echo "caught: $caught, missed: $(wc -l < "$missed"), unviable: $(wc -l < "$out/mutants.out/unviable.txt"), timeouts: $(wc -l < "$out/mutants.out/timeout.txt")"
if [ -n "$unexplained" ]; then
  printf 'surviving mutants not listed in mutants-allowed.txt:\n%s\n' "$unexplained"
  exit 1
fi
echo "every surviving mutant is listed with its reason"
