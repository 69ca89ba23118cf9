#!/usr/bin/env bash
# The Python package's tests against one PySpark line, as a user installs it: a virtual environment
# per line (target/python/venv-<line>, PySpark from PyPI), the package built as a wheel and installed
# there, then pytest over python/tests (local-cluster jobs, and a standalone Master and Worker fed
# spark-submit --jars <the one jar> --py-files <the package>). Needs the one jar of the line's Scala
# binary: `mvn package` builds the 2.13 jar (Spark 4.x), `-Pspark-lines` the 2.12 jar (Spark 3.5).
#   scripts/python/test.sh [4.2|3.5] [pytest args...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
line=${1:-4.2}
shift || true
case "$line" in
  4.2) deps=("pyspark==4.2.0" "numpy>=1.23" pyarrow) ;;
  # PySpark 3.5 predates NumPy 2 (np.NaN and friends are gone there).
  3.5) deps=("pyspark==3.5.8" "numpy<2" "pyarrow<18") ;;
  *) echo "usage: $0 [4.2|3.5] [pytest args...]" >&2; exit 2 ;;
esac
venv="$ROOT/target/python/venv-$line"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check "${deps[@]}" "pandas<3" pytest ml_dtypes
rm -rf "$ROOT/target/python/dist"
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$ROOT/target/python/dist" "$ROOT/python"
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$ROOT"/target/python/dist/gpucoll-*.whl
echo "PySpark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)'), gpucoll $("$venv/bin/python" -c 'import gpucoll; print(gpucoll.__version__)') (wheel)"
# From target/: the tests import the installed wheel, not the source tree.
cd "$ROOT/target"
exec "$venv/bin/pytest" -q -rs -p no:cacheprovider -o "testpaths=$ROOT/python/tests" --rootdir "$ROOT/python" "$ROOT/python/tests" "$@"
