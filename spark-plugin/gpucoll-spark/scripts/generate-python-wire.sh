#!/usr/bin/env bash
# Regenerates the Python wire's two sides from python-wire.txt and the Java API's enums (run after
# editing the table or an enum, then commit the outputs):
#   python/gpucoll/_wire.py                                    (the Python package)
#   src/main/java/dev/gpucoll/spark/python/PythonWire.java     (PythonChannel, PythonMailbox, PythonSession)
# The Maven build runs the same generator with --check and fails when a checked-in output is stale.
# Needs the API's classes: build them first (mvn -o -q -pl spark-plugin/gpucoll-api compile).
#   spark-plugin/gpucoll-spark/scripts/generate-python-wire.sh [--check]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:---write}"
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
exec "$java_bin" -cp "$here/../gpucoll-api/target/classes" "$here/scripts/PythonWireGen.java" "$mode" \
  "$here/python-wire.txt" "$here/../../python/gpucoll/_wire.py" \
  "$here/src/main/java/dev/gpucoll/spark/python/PythonWire.java"
