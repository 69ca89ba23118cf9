# Sourced, not run, by integration-tests/gpu/spark/run.sh and integration-tests/gpu/python/gpu-check.sh: a Spark standalone
# cluster on this machine from the unpacked slim Spark set, with its Java runtime only.
# Before sourcing: ROOT (the repository), SPARK_SLIM (the unpacked set), RUN (a scratch folder; the
# Master's and Workers' logs go to $RUN/logs). Sourcing sets JAVA, JFLAGS (Spark's own JVM flags for
# Java 17+, one place: spark.jvm.flags in the root pom) and exports JAVA_HOME, SPARK_HOME,
# SPARK_SCALA_VERSION.
#   cluster_start WORKERS CORES MEMORY [gpu] [hosts]
#     a Master on 127.0.0.1 and WORKERS Workers of CORES cores and MEMORY each; with "gpu", Worker w
#     is given GPU w alone (spark.worker.resource.gpu.amount=1 and a discovery script printing only
#     w), so an executor never discovers another Worker's GPU. With "hosts", each Worker is a host of
#     its own, simulated on this machine: Worker w binds 127.0.0.(w+2) (Spark's host of its
#     executors) and runs with NCCL_HOSTID=gpucoll-host-w (NCCL's host of its processes, which then
#     share GPU 0 over NCCL's network transport, as ranks of different hosts); every Worker is given
#     GPU 0. Sets MASTER (spark://127.0.0.1:PORT) and CLUSTER_PIDS; returns 1, saying why, when one of
#     them exits at start or the Workers have not registered within 120 s.
#   cluster_stop
JAVA="$SPARK_SLIM/jre/bin/java"
export JAVA_HOME="$SPARK_SLIM/jre" SPARK_HOME="$SPARK_SLIM" SPARK_SCALA_VERSION=2.13
read -r -a JFLAGS <<< "$(sed -n 's:.*<spark.jvm.flags>\(.*\)</spark.jvm.flags>.*:\1:p' "$ROOT/pom.xml")"
CLUSTER_PIDS=()

cluster_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000))
}

cluster_start() {
  local workers=$1 cores=$2 memory=$3 gpu=${4:-} hosts=${5:-} w port n host gpu_of
  mkdir -p "$RUN/logs"
  port=$(cluster_free_port)
  MASTER="spark://127.0.0.1:$port"
  # Master and Workers log at Spark's default level (INFO): the registration lines below are read from it.
  "$JAVA" "${JFLAGS[@]}" -Xmx1g -cp "$SPARK_SLIM/jars/*" org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$port" --webui-port 0 > "$RUN/logs/master.log" 2>&1 &
  CLUSTER_PIDS+=($!)
  for ((w = 0; w < workers; w++)); do
    local wopts=() wenv=()
    host=127.0.0.1
    gpu_of=$w
    if [ -n "$hosts" ]; then
      host=127.0.0.$((w + 2))
      gpu_of=0
      wenv=(SPARK_LOCAL_IP="$host" NCCL_HOSTID="gpucoll-host-$w")
    fi
    if [ -n "$gpu" ]; then
      printf '#!/usr/bin/env bash\necho '"'"'{"name": "gpu", "addresses": ["%d"]}'"'"'\n' "$gpu_of" > "$RUN/gpu$w.sh"
      chmod +x "$RUN/gpu$w.sh"
      wopts=(-Dspark.worker.resource.gpu.amount=1 "-Dspark.worker.resource.gpu.discoveryScript=$RUN/gpu$w.sh")
    fi
    env "${wenv[@]}" "$JAVA" "${JFLAGS[@]}" -Xmx1g "${wopts[@]}" -cp "$SPARK_SLIM/jars/*" \
      org.apache.spark.deploy.worker.Worker --host "$host" --port 0 --webui-port 0 --cores "$cores" \
      --memory "$memory" --work-dir "$RUN/work$w" "$MASTER" > "$RUN/logs/worker$w.log" 2>&1 &
    CLUSTER_PIDS+=($!)
  done
  for _ in $(seq 1 240); do
    n=$(grep -c 'Registering worker' "$RUN/logs/master.log" 2>/dev/null)
    [ "${n:-0}" -ge "$workers" ] && return 0
    for p in "${CLUSTER_PIDS[@]}"; do
      kill -0 "$p" 2>/dev/null || { echo "cluster.sh: the Master or a Worker exited at start:" >&2
        grep -h -m3 -E 'Exception|Error' "$RUN"/logs/*.log >&2; return 1; }
    done
    sleep 0.5
  done
  echo "cluster.sh: only ${n:-0} of $workers workers registered with the master within 120 s" >&2
  return 1
}

cluster_stop() {
  for p in "${CLUSTER_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${CLUSTER_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  CLUSTER_PIDS=()
}
