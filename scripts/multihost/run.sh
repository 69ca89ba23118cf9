#!/usr/bin/env bash
# A multi-host Spark standalone cluster on one machine (netns.sh): the Master and the driver in the
# root namespace (198.18.0.1), one Worker per simulated host (2 cores: 2 executors of 1 core), the
# one jar through spark-submit --jars, and MultiHostCollectivesApp: every collective across the
# hosts checked on the driver, then a SIGKILL of one executor mid-collective and the retried stage.
# Needs root, iproute2, util-linux and UCX (apt-get install -y iproute2 libucx0); run after
#   mvn -B -pl integration-tests -am package -DskipTests   (the dist jar, the app, Spark's jars)
#   scripts/multihost/run.sh [hosts=3]
# KEEP=1 keeps the work directory (logs of every process) for debugging.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
source scripts/multihost/netns.sh
hosts="${1:-3}"
per_host=2
ranks=$((hosts * per_host))
dist=$(ls spark-plugin/gpucoll-dist/target/gpucoll-dist_2.13-*.jar | grep -v -e sources -e javadoc | head -1)
classes=integration-tests/target/test-classes
cpfile=integration-tests/target/spark-classpath.txt
for f in "$dist" "$classes/dev/gpucoll/it/cluster/MultiHostCollectivesApp.class" "$cpfile"; do
  [ -e "$f" ] || { echo "missing $f: run mvn -B -pl integration-tests -am package -DskipTests first" >&2; exit 2; }
done
ldconfig -p | grep libucp.so.0 >/dev/null || { echo "UCX is missing: apt-get install -y libucx0" >&2; exit 2; }
work=$(mktemp -d /tmp/gpucoll-multihost.XXXXXX)
submit_pid=""
master_pid=""
finish() {
  local rc=$?
  [ -n "$submit_pid" ] && kill -KILL "$submit_pid" 2>/dev/null || true
  [ -n "$master_pid" ] && { kill -KILL "$master_pid" 2>/dev/null; wait "$master_pid" 2>/dev/null; } || true
  mh_cleanup
  if [ "$rc" != 0 ]; then
    echo "---- logs ($work) ----"
    for f in "$work"/logs/*.log; do echo "== $f"; tail -n 30 "$f"; done
    find "$work/work" -name stderr 2>/dev/null | head -3 | while read -r f; do echo "== $f"; grep -E "Exception|ERROR|gpucoll" "$f" | head -10; done
  fi
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
  exit "$rc"
}
trap finish EXIT INT TERM
start=$(date +%s)

mkdir -p "$work/spark-home/jars" "$work/logs" "$work/work" "$work/app"
tr ':' '\n' < "$cpfile" | grep '\.jar$' | while read -r j; do ln -s "$j" "$work/spark-home/jars/"; done
(cd "$classes" && jar cf "$work/app/multihost-app.jar" dev/gpucoll/it/cluster/ClusterCollectivesApp*.class \
  dev/gpucoll/it/cluster/MultiHostCollectivesApp*.class)
read -r -a jflags <<< "$(sed -n 's:.*<spark.jvm.flags>\(.*\)</spark.jvm.flags>.*:\1:p' pom.xml)"
sparkcp="$work/spark-home/jars/*"
export SPARK_HOME="$work/spark-home" SPARK_SCALA_VERSION=2.13
unset SPARK_CONF_DIR

mh_setup "$hosts"
master=spark://198.18.0.1:7077
SPARK_LOCAL_IP=198.18.0.1 java "${jflags[@]}" -cp "$sparkcp" -Xmx256m org.apache.spark.deploy.master.Master --host 198.18.0.1 \
  --port 7077 --webui-port 8090 > "$work/logs/master.log" 2>&1 &
master_pid=$!
for i in $(seq 1 "$hosts"); do
  ip=$(mh_ip "$i")
  mkdir -p "$work/work/h$i"
  # No UCX_NET_DEVICES: the plugin limits UCX to the executor address's interface (eth0 here) itself.
  on_host "$i" "$work/logs/worker-h$i.log" env SPARK_LOCAL_IP="$ip" \
    java "${jflags[@]}" -cp "$sparkcp" -Xmx256m org.apache.spark.deploy.worker.Worker --host "$ip" --cores "$per_host" \
    --memory 2g --webui-port 0 --work-dir "$work/work/h$i" "$master"
done
for _ in $(seq 1 120); do
  alive=$(grep -c "Registering worker" "$work/logs/master.log" 2>/dev/null || true)
  [ "${alive:-0}" -ge "$hosts" ] && break
  kill -0 "$master_pid" 2>/dev/null || { echo "the Master exited" >&2; exit 1; }
  for p in "${MH_HOST_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || { echo "a Worker exited" >&2; exit 1; }; done
  sleep 1
done
[ "${alive:-0}" -ge "$hosts" ] || { echo "only ${alive:-0} of $hosts workers registered" >&2; exit 1; }
echo "cluster: Master 198.18.0.1, $hosts Workers on $(for i in $(seq 1 "$hosts"); do printf '%s ' "$(mh_ip "$i")"; done)($(( $(date +%s) - start )) s)"

props="$work/app.properties"
grep -v '^\s*#' conf/spark-defaults.conf.template | grep -v '^\s*$' > "$props"
cat >> "$props" <<PROPS
spark.cores.max $ranks
spark.executor.cores 1
spark.executor.memory 512m
spark.driver.host 198.18.0.1
spark.driver.bindAddress 198.18.0.1
spark.ui.enabled false
spark.gpucoll.backend host
spark.gpucoll.host.crossHost ucx
spark.gpucoll.timeout 30s
spark.gpucoll.report summary
PROPS
SPARK_LOCAL_IP=198.18.0.1 java "${jflags[@]}" -cp "$sparkcp" -Xmx768m org.apache.spark.deploy.SparkSubmit --master "$master" \
  --deploy-mode client --name multihost --properties-file "$props" \
  --class dev.gpucoll.it.cluster.MultiHostCollectivesApp --jars "$dist" "$work/app/multihost-app.jar" \
  "$ranks" "$hosts" > "$work/logs/submit.log" 2>&1 &
submit_pid=$!
rc=0
timeout 240 tail --pid="$submit_pid" -f /dev/null || rc=$?
wait "$submit_pid" || rc=$?
submit_pid=""
grep -E "^stage|GPUCOLL-CLUSTER" "$work/logs/submit.log" || true
echo "multi-host test: $(( $(date +%s) - start )) s"
grep -q "GPUCOLL-CLUSTER-OK" "$work/logs/submit.log" && [ "$rc" = 0 ]
