# Sourced by demo.sh and example.sh: builds the plugin and the examples into ~/.m2 (what exec:exec
# then runs), saying what it does: one line per module as Maven reaches it, the downloads so far
# every 25 artifacts, errors in full. Without the cuDF job (profile cudf, off by default): neither
# script uses it, and cuDF's jar is 337 MB.
if [ -d "$HOME/.m2/repository/org/apache/spark/spark-core_2.13" ]; then
  echo "Building the plugin and the examples with Maven..."
else
  echo "Building the plugin and the examples with Maven; this first build downloads Spark and the other"
  echo "dependencies into ~/.m2 (a few hundred MB, a few minutes); later builds take seconds..."
fi
mvn -B install -DskipTests -pl examples -am | awk '
  function progress() { printf "  downloaded %d files, %.0f MB\n", files, bytes / 1e6; fflush() }
  /^\[INFO\] Building .*\[[0-9]+\/[0-9]+\]$/ {
    line = $0; sub(/^\[INFO\] Building /, "", line); step = line
    sub(/^.*\[/, "[", step); sub(/ *\[[0-9]+\/[0-9]+\]$/, "", line)
    print "  " step " " line; fflush(); next }
  /^\[INFO\] Downloaded from / {
    files++
    if (match($0, /\(([0-9.]+) (B|kB|MB|GB) at/)) {
      split(substr($0, RSTART + 1, RLENGTH - 1), size, " ")
      bytes += size[1] * (size[2] == "GB" ? 1e9 : size[2] == "MB" ? 1e6 : size[2] == "kB" ? 1e3 : 1)
    }
    if (files % 25 == 0) progress()
    next }
  /^\[ERROR\]/ || /BUILD FAILURE/ { print; fflush() }
  END { if (files % 25 != 0) progress() }'
