#!/usr/bin/env bash
# Mutation testing of src/ with cargo-mutants.
#
#   scripts/mutants.sh [ARGS]         all features (.cargo/mutants.toml); fails when a mutant
#                                     survives that mutants-allowed.txt does not list with a
#                                     reason. ARGS go to cargo-mutants, e.g. --file src/declare/spec.rs
#   scripts/mutants.sh --core [ARGS]  the code compiled only without `alloc` or `std`
#                                     (.cargo/mutants-core.toml); fails when a mutant that
#                                     mutants-allowed.txt says "the core pass" kills survives.
#                                     Its other survivors are judged by the all-features pass.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
out=target/mutants
mkdir -p "$out" # cargo-mutants does not create the parent on a clean checkout
core=false
if [ "${1:-}" = "--core" ]; then
  core=true
  shift
  set -- --config .cargo/mutants-core.toml --file src/declare/input_error.rs --file src/declare/registry.rs \
    -F 'InputErrors::(push|omitted)|Display for InputErrors|Registry<C>::get' "$@"
fi
cargo mutants --output "$out" --no-shuffle "$@"
status=$?
results="$out/mutants.out"
[ -f "$results/missed.txt" ] || { echo "cargo-mutants produced no results (exit $status)"; exit 1; }
# Exit 2 means mutants were missed and 3 timeouts, both judged below; anything else but 0
# (a baseline that fails, a usage error) means nothing trustworthy was tested.
case $status in 0 | 2 | 3) ;; *) echo "cargo-mutants failed (exit $status)"; exit 1 ;; esac
echo "caught: $(wc -l < "$results/caught.txt"), missed: $(wc -l < "$results/missed.txt"), unviable: $(wc -l < "$results/unviable.txt"), timeouts: $(wc -l < "$results/timeout.txt")"

# mutants-allowed.txt: one mutant per line as cargo-mutants names it, then `  # reason`.
names() { sed -e 's/[[:space:]]*#.*$//' -e '/^$/d'; }
if $core; then
  promised=$(grep -F -x -f <(grep -E '#.*core pass' mutants-allowed.txt | names) "$results/missed.txt" || true)
  if [ -n "$promised" ]; then
    printf 'mutants-allowed.txt says the core pass kills these, but they survived it:\n%s\n' "$promised"
    exit 1
  fi
  echo "every mutant that mutants-allowed.txt leaves to the core pass is killed"
  exit 0
fi
unexplained=$(grep -v -x -F -f <(names < mutants-allowed.txt) "$results/missed.txt" || true)
if [ -n "$unexplained" ]; then
  printf 'surviving mutants not listed in mutants-allowed.txt:\n%s\n' "$unexplained"
  exit 1
fi
echo "every surviving mutant is listed with its reason"
