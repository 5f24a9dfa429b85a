#!/usr/bin/env bash
# The governed firmware on an emulated Cortex-M4 (QEMU's mps2-an386): builds it, runs it
# under QEMU with semihosting, compares what it prints with the transcript checked in
# (a changed decision fails), then prints its size and what governance adds, against the
# same firmware dispatching the same calls directly.
#   scripts/firmware.sh            run and compare
#   scripts/firmware.sh --bless    run and write the transcript anew (review the diff!)
set -euo pipefail
cd "$(dirname "$0")/../examples/firmware"
target=target/thumbv7em-none-eabihf/release/cairnloop-firmware
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cargo build --quiet --release --features direct
cp "$target" "$out/direct.elf"
cargo build --quiet --release
cp "$target" "$out/governed.elf"

status=0
# The runner (.cargo/config.toml) is QEMU; the firmware's exit status comes back
# through semihosting.
cargo run --quiet --release > "$out/transcript.txt" || status=$?
if [ "${1:-}" = --bless ]; then
  cp "$out/transcript.txt" transcript.txt
fi
if ! diff -u transcript.txt "$out/transcript.txt"; then
  echo "firmware: the transcript differs from examples/firmware/transcript.txt" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "firmware: exited with status $status" >&2
  exit 1
fi
echo "firmware: $(grep -c '^> ' transcript.txt) inputs, transcript as checked in, exit status 0"
python3 ../../scripts/elf_size.py --firmware "$out/governed.elf" "$out/direct.elf"
