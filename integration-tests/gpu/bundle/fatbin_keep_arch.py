#!/usr/bin/env python3
"""Zeroes, in a CUDA shared library's .nv_fatbin section, the device code of every architecture but
one (the GPU machine's cards are sm_90), so that xz packs the file to a fraction of its size.

The fatbin headers stay as they are: the driver reads them, picks the image for the card (sm_90 SASS
here) and never reads the zeroed payloads, which belong to cards this copy will not run on. The
host code and the kept images are byte-for-byte the library's. Only for carrying the library to
the GPU machine under its upload limit; never a file to hand to anyone else.

  fatbin_keep_arch.py LIB ARCH   (in place; prints what it kept and what it zeroed)
"""
import struct
import subprocess
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_ELF = 2


def fatbin_section(path):
    out = subprocess.check_output(["readelf", "-S", "-W", path], text=True)
    for line in out.splitlines():
        if " .nv_fatbin " in line + " ":
            fields = line.split("]", 1)[1].split()
            return int(fields[3], 16), int(fields[4], 16)
    sys.exit(f"fatbin_keep_arch.py: {path} has no .nv_fatbin section")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: fatbin_keep_arch.py LIB ARCH (e.g. 90)")
    path, keep = sys.argv[1], int(sys.argv[2])
    offset, size = fatbin_section(path)
    with open(path, "r+b") as f:
        f.seek(offset)
        data = bytearray(f.read(size))
        pos, kept, zeroed, fatbins = 0, 0, 0, 0
        while pos + 16 <= len(data):
            magic, _version, header, body = struct.unpack_from("<IHHQ", data, pos)
            if magic != FATBIN_MAGIC:
                pos += 8  # fatbins are 8-byte aligned in the section
                continue
            fatbins += 1
            entry, end = pos + header, pos + header + body
            while entry < end:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
                arch = struct.unpack_from("<I", data, entry + 28)[0]
                start = entry + entry_header
                if kind == KIND_ELF and arch == keep:
                    kept += payload
                else:
                    data[start:start + payload] = bytes(payload)
                    zeroed += payload
                entry = start + payload
            if entry != end:
                sys.exit(f"fatbin_keep_arch.py: fatbin at {offset + pos:#x} does not parse; file left as it was")
            pos = end
        if kept == 0:
            sys.exit(f"fatbin_keep_arch.py: no sm_{keep} image in {path}; file left as it was")
        f.seek(offset)
        f.write(data)
    print(f"{path}: {fatbins} fatbins, sm_{keep} images kept ({kept} bytes), {zeroed} bytes of other images zeroed")


if __name__ == "__main__":
    main()
