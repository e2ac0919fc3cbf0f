"""Lists the CUDA fatbins embedded in a file (a cuda artifact).

usage: fatbins.py FILE [GPU_IR]

Prints how many fatbins the file holds and, for each distinct list of
images, how many fatbins have it: `elf sm_80` for a cubin (its fatbin entry
and its own ELF header must agree on the architecture, and the ELF must be
a CUDA one), `ptx sm_80` for PTX. Fails on a truncated or inconsistent
fatbin, and, given the module at `--compile-to=gpu` (GPU_IR), unless there
is exactly one fatbin per `gpu.module` in it. The layout is the CUDA fatbin container's: a 16-byte header (magic
0xBA55ED50, version, header size, payload size), then entries (kind 1 PTX,
2 ELF; header size at 4, padded payload size at 8, SM architecture at 28).
"""
import collections
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)
EM_CUDA = 190


def images(data, start):
    _, header, size = struct.unpack_from("<HHQ", data, start + 4)
    offset, end = start + header, start + header + size
    if end > len(data):
        sys.exit(f"fatbin at {start:#x} is truncated")
    found = []
    while offset < end:
        kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, offset)
        (sm,) = struct.unpack_from("<I", data, offset + 28)
        payload = offset + entry_header
        if kind == 2:
            if data[payload:payload + 4] != b"\x7fELF":
                sys.exit(f"fatbin at {start:#x}: sm_{sm} image is not an ELF")
            (machine,) = struct.unpack_from("<H", data, payload + 18)
            (flags,) = struct.unpack_from("<I", data, payload + 48)
            if machine != EM_CUDA or (flags >> 8) & 0xFF != sm:
                sys.exit(f"fatbin at {start:#x}: the sm_{sm} cubin's ELF says "
                         f"machine {machine}, sm_{(flags >> 8) & 0xFF}")
            found.append(f"elf sm_{sm}")
        elif kind == 1:
            found.append(f"ptx sm_{sm}")
        else:
            sys.exit(f"fatbin at {start:#x}: unknown image kind {kind}")
        offset = payload + padded
    return found, end


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    kinds = collections.Counter()
    start = data.find(MAGIC)
    while start >= 0:
        found, end = images(data, start)
        kinds[", ".join(sorted(found))] += 1
        start = data.find(MAGIC, end)
    total = sum(kinds.values())
    if len(sys.argv) == 3:
        modules = open(sys.argv[2]).read().count("gpu.module @")
        if modules != total:
            sys.exit(f"{total} fatbins for {modules} gpu.modules")
        print("one fatbin per gpu.module")
    print(f"fatbins: {total}")
    for key, count in sorted(kinds.items()):
        print(f"{count} x [{key}]")


if __name__ == "__main__":
    main()
