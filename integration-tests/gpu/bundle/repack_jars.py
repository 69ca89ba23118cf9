#!/usr/bin/env python3
"""Rewrites jars for the GPU machine (Linux x86-64): every entry stored, not deflated (a tar of
stored jars compresses far better with xz than already-deflated jars), native libraries for
other platforms dropped, and, for the jars a package list names, only the classes of the listed
packages kept (every other entry is kept).

Usage: repack_jars.py [--keep-natives] SRC_DIR DST_DIR [PACKAGE_LIST]
  --keep-natives: keep every native library (our jars: JUCX's libjucx_amd64.so names no OS)
  PACKAGE_LIST: lines "<jar name prefix> <package>" ('#' starts a comment)
Prints one line per jar: name, bytes before, after, entries dropped.
"""
import os
import re
import sys
import zipfile

NATIVE = re.compile(r"\.(so|dll|dylib|jnilib|a)(\.\d+)*$", re.IGNORECASE)
# Paths that name Linux x86-64 in the layouts of the jars Spark brings: snappy Linux/x86_64,
# zstd-jni and lz4 linux/amd64, commons-crypto Linux/x86_64, leveldbjni linux64/, netty *_linux_x86_64.
LINUX_X64 = re.compile(r"(linux[/_-]?(x86[_-]64|amd64)(?!-musl)|linux64/[^/]+$)", re.IGNORECASE)


def keep(jar, name):
    if name.endswith("/") or not NATIVE.search(name):
        return True
    # A jar whose classifier is linux-x86_64 holds only that platform's natives, whatever their names.
    return bool(LINUX_X64.search(jar) or LINUX_X64.search(name))


def read_packages(path):
    """{jar name prefix: set of package paths}"""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                out.setdefault(line[0], set()).add(line[1].replace(".", "/"))
    return out


def repack(src, dst, packages, keep_natives=False):
    dropped = 0
    jar = os.path.basename(src)
    kept_packages = next((v for k, v in packages.items() if jar.startswith(k + "-")), None)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            name = info.filename
            if kept_packages is not None and name.endswith(".class") and name.rsplit("/", 1)[0] not in kept_packages:
                dropped += 1
                continue
            if not keep_natives and not keep(jar, name):
                dropped += 1
                continue
            out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            out.external_attr = info.external_attr
            out.compress_type = zipfile.ZIP_STORED
            zout.writestr(out, zin.read(info.filename))
    return dropped


def main():
    args = sys.argv[1:]
    keep_natives = args[:1] == ["--keep-natives"]
    if keep_natives:
        args = args[1:]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    src_dir, dst_dir = args[0], args[1]
    packages = read_packages(args[2]) if len(args) == 3 else {}
    os.makedirs(dst_dir, exist_ok=True)
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith(".jar"):
            continue
        src = os.path.join(src_dir, name)
        dst = os.path.join(dst_dir, name)
        dropped = repack(src, dst, packages, keep_natives)
        print("%-60s %10d -> %10d  entries dropped: %d" % (name, os.path.getsize(src), os.path.getsize(dst), dropped))


if __name__ == "__main__":
    main()
