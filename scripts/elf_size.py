#!/usr/bin/env python3
"""Prints the code (.text) and read-only data (.rodata) sizes of an ELF file, any
architecture: the size of the bare-metal no_std check binary, without cross binutils.

Usage: scripts/elf_size.py FILE
       scripts/elf_size.py --firmware GOVERNED DIRECT
The second form prints flash (.text + .rodata) and static RAM (.data + .bss) of a
governed firmware and of the same firmware dispatching directly, and what governance
adds: the difference. Flash also holds the initial image of .data (as large as .data),
shown apart."""

import struct
import sys


def sections(data):
    is64 = data[4] == 2
    little = data[5] == 1
    end = "<" if little else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)

    def header(i):
        at = shoff + i * shentsize
        if is64:
            name, _, _, _, offset, size = struct.unpack_from(end + "IIQQQQ", data, at)
        else:
            name, _, _, _, offset, size = struct.unpack_from(end + "IIIIII", data, at)
        return name, offset, size

    _, names_at, _ = header(shstrndx)
    for i in range(shnum):
        name, _, size = header(i)
        raw = data[names_at + name:data.index(b"\0", names_at + name)]
        yield raw.decode(), size


def footprint(path):
    """Flash and static RAM of a firmware image, in bytes."""
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF":
        sys.exit(f"{path} is not an ELF file")
    sizes = {}
    for name, size in sections(data):
        for kind in (".text", ".rodata", ".data", ".bss", ".vector_table"):
            if name == kind or name.startswith(kind + "."):
                sizes[kind] = sizes.get(kind, 0) + size
    flash = sizes.get(".text", 0) + sizes.get(".rodata", 0)
    ram = sizes.get(".data", 0) + sizes.get(".bss", 0)
    return flash, ram, sizes.get(".data", 0)


def firmware(governed, direct):
    (flash, ram, data), (bare_flash, bare_ram, bare_data) = footprint(governed), footprint(direct)

    def line(label, flash, ram, data):
        print(f"{label:<11} flash (.text + .rodata) {flash} bytes ({flash / 1024:.1f} KiB), "
              f"static RAM (.data + .bss) {ram} bytes ({ram / 1024:.1f} KiB); "
              f".data's image in flash {data} bytes")

    line("firmware:", flash, ram, data)
    line("direct:", bare_flash, bare_ram, bare_data)
    line("governance:", flash - bare_flash, ram - bare_ram, data - bare_data)


def main():
    if sys.argv[1] == "--firmware":
        return firmware(sys.argv[2], sys.argv[3])
    data = open(sys.argv[1], "rb").read()
    if data[:4] != b"\x7fELF":
        sys.exit(f"{sys.argv[1]} is not an ELF file")
    sizes = {}
    for name, size in sections(data):
        for kind in (".text", ".rodata"):
            if name == kind or name.startswith(kind + "."):
                sizes[kind] = sizes.get(kind, 0) + size
    text, rodata = sizes.get(".text", 0), sizes.get(".rodata", 0)
    print(f"text {text} bytes, rodata {rodata} bytes, total {text + rodata} bytes")


if __name__ == "__main__":
    main()
