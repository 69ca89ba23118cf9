# Sourced by demo.sh and example.sh: builds the plugin and the examples into ~/.m2 (what exec:exec
# then runs), saying what it does: one line per module as Maven reaches it, errors in full. Leaves out
# the cuDF job (-Dgpucoll.withoutCudf): neither script uses it, and cuDF's jar is 337 MB.
if [ -d "$HOME/.m2/repository/org/apache/spark/spark-core_2.13" ]; then
  echo "Building the plugin and the examples with Maven..."
else
  echo "Building the plugin and the examples with Maven; this first build downloads Spark and the other"
  echo "dependencies into ~/.m2 (a few hundred MB, a few minutes); later builds take seconds..."
fi
# Maven's reactor lines "[INFO] Building gpucoll-api 0.1.0  [1/7]" become "  [1/7] gpucoll-api 0.1.0".
mvn -B -ntp install -DskipTests -Dgpucoll.withoutCudf -pl examples -am | sed -u -n \
  -e 's/^\[INFO\] Building \([^ ].*[^ ]\) *\[\([0-9]*\/[0-9]*\)\]$/  [\2] \1/p' \
  -e '/^\[ERROR\]/p' -e '/BUILD FAILURE/p'
