#!/usr/bin/env bash
# Builds .pyspark/ (git-ignored; it travels to the GPU machine with the GPU acceptance bundle): the
# Python side of PySpark at the project's Spark version (spark.version in the root pom), for a
# machine with Python but no PySpark and no package index. From PySpark's package on PyPI:
#   python/lib/pyspark.zip           the pyspark package without its jars, tests, examples and the
#                                    parts that need JVM modules the slim Spark set does not have
#                                    (pyspark-slim/drop.txt says what and why), entries stored
#   python/lib/py4j-*-src.zip        py4j, the version PySpark's JVM side names (PythonUtils)
# as one tar, xz-compressed: .pyspark/pyspark.tar.xz, with SHA256SUMS and VERSION. Unpacked into the
# slim Spark set ($SPARK_SLIM/python/lib, where Spark puts both on the Python path of the driver and
# of every Python worker) by integration-tests/gpu/python/gpu-check.sh. Changes only with Spark.
#   bash integration-tests/gpu/bundle/pyspark-slim.sh
# pip's wheel cache keeps the wheel it built from PySpark's sdist (450 MB with the jars): a second
# build on the same machine asks the index for the version and downloads nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT_DIR="$ROOT/.pyspark"
VERSION=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$ROOT/pom.xml" | head -1)
[ -n "$VERSION" ] || { echo "pyspark-slim.sh: no spark.version in pom.xml" >&2; exit 1; }
for tool in python3 xz; do
  command -v "$tool" >/dev/null || { echo "pyspark-slim.sh: $tool not found" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/gpucoll-pyspark-slim.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

python3 -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/wheel" "pyspark==$VERSION"
WHEEL=$(ls "$WORK"/wheel/pyspark-"$VERSION"-*.whl)
mkdir -p "$WORK/set/python/lib"
python3 - "$WHEEL" "$ROOT/integration-tests/gpu/bundle/pyspark-slim/drop.txt" "$WORK/set/python/lib" "$VERSION" <<'EOF'
import fnmatch, os, re, sys, zipfile
wheel, drop_list, lib, version = sys.argv[1:]
drops = []
for line in open(drop_list):
    line = line.split("#", 1)[0].split()
    if line:
        drops.append(line[0])

def dropped(name):
    for d in drops:
        if d.startswith("*/") and d.endswith("/"):
            if "/" + d[2:] in "/" + name:
                return True
        elif d.endswith("/"):
            if name.startswith(d):
                return True
        elif fnmatch.fnmatch(name, d):
            return True
    return False

kept = left = raw = 0
with zipfile.ZipFile(wheel) as w:
    names = w.namelist()
    py4j = [n for n in names if re.fullmatch(r"pyspark/python/lib/py4j-[0-9.]+-src\.zip", n)]
    if len(py4j) != 1:
        sys.exit("pyspark-slim.sh: no single py4j source zip in the wheel: %s" % py4j)
    with open(os.path.join(lib, os.path.basename(py4j[0])), "wb") as f:
        f.write(w.read(py4j[0]))
    # Stored, not deflated: the tar around it is xz-compressed.
    with zipfile.ZipFile(os.path.join(lib, "pyspark.zip"), "w", zipfile.ZIP_STORED) as z:
        for info in w.infolist():
            name = info.filename
            if not name.startswith("pyspark/") or name.endswith("/"):
                continue
            if dropped(name):
                left += 1
                continue
            out = zipfile.ZipInfo(name, date_time=info.date_time)
            out.external_attr = info.external_attr
            data = w.read(name)
            z.writestr(out, data)
            kept += 1
            raw += len(data)
    got = w.read("pyspark/version.py").decode()
    if version not in got:
        sys.exit("pyspark-slim.sh: the wheel's version.py says %r, not %s" % (got, version))
print("pyspark.zip: %d files kept (%.1f MiB), %d left out; %s" % (kept, raw / 1048576, left, os.path.basename(py4j[0])))
EOF
# The package imports as a user's job needs it: pyspark, its contexts, the worker and the daemon.
(cd "$WORK" && PYTHONPATH="$(ls "$WORK"/set/python/lib/*.zip | paste -sd:)" python3 -c \
  'import pyspark, pyspark.worker, pyspark.daemon, pyspark.testing.utils; from pyspark import SparkContext, BarrierTaskContext; print("imports:", pyspark.__version__, pyspark.__file__)')
rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"
tar -C "$WORK/set" -cf - python | xz -9 -T2 > "$OUT_DIR/pyspark.tar.xz"
echo "$VERSION" > "$OUT_DIR/VERSION"
(cd "$OUT_DIR" && sha256sum pyspark.tar.xz > SHA256SUMS)
git -C "$ROOT" check-ignore -q "$OUT_DIR" || { echo "pyspark-slim.sh: .pyspark is not git-ignored" >&2; exit 1; }
echo ".pyspark: PySpark $VERSION, $(du -sb "$WORK/set" | cut -f1) bytes unpacked, $(stat -c %s "$OUT_DIR/pyspark.tar.xz") bytes as tar.xz"
