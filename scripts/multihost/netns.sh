#!/usr/bin/env bash
# Simulated hosts on one machine, sourced by run.sh and bench.sh (root; iproute2, util-linux).
# Host i (1..N) is a network namespace gcmh-h<i> with its own address 198.18.0.<10+i>/24 on the
# bridge gcmh-br (198.18.0.1, the root namespace: Master, driver, mpirun), and every process started
# there with on_host also gets its own UTS namespace (hostname gcmh-host<i>), mount namespace
# (its own /dev/shm tmpfs and /etc/hosts) and IPC namespace: the hosts share nothing but the kernel.
# 198.18.0.0/15 is reserved for benchmarking (RFC 2544), so no real network uses it.
# mh_setup_isolated puts the bridge in a namespace of its own (gcmh-sw) and 198.18.0.1 in a launcher
# namespace (gcmh-h0, where on_host 0 runs): nothing is added to the caller's network namespace.
# mh_cleanup removes every namespace, link and process this file made; callers trap it on EXIT.

# A caller may set MH_PREFIX and MH_SWITCH first (bench.sh does: its namespaces never collide with a
# run.sh running at the same time).
MH_BRIDGE=gcmh-br
MH_PREFIX=${MH_PREFIX:-gcmh-h}
MH_HOST_PIDS=()
MH_HOSTS_FILES=()
MH_HOSTS=0
MH_FORWARD_RULE=0
MH_SWITCH=${MH_SWITCH:-gcmh-sw}
MH_ISOLATED=0

mh_ip() { if [ "$1" = 0 ]; then echo 198.18.0.1; else echo "198.18.0.$((10 + $1))"; fi; }

mh_check_tools() {
  for tool in ip unshare mount; do
    command -v "$tool" >/dev/null || { echo "netns.sh: $tool is missing (apt-get install iproute2 util-linux)" >&2; return 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "netns.sh: needs root (network namespaces)" >&2; return 1; }
}

# mh_setup_isolated <n>: hosts 0 (the launcher, 198.18.0.1) to n, bridged inside namespace gcmh-sw.
# A fresh namespace forwards bridged traffic (its FORWARD policy is ACCEPT), so no iptables rule.
mh_setup_isolated() {
  local n=$1 i
  mh_check_tools || return 1
  MH_HOSTS=$n
  MH_ISOLATED=1
  ip netns add "$MH_SWITCH"
  ip -n "$MH_SWITCH" link add "$MH_BRIDGE" type bridge
  ip -n "$MH_SWITCH" link set "$MH_BRIDGE" up
  for i in $(seq 0 "$n"); do
    ip netns add "$MH_PREFIX$i"
    ip -n "$MH_SWITCH" link add "gcmh-v$i" type veth peer name eth0 netns "$MH_PREFIX$i"
    ip -n "$MH_SWITCH" link set "gcmh-v$i" master "$MH_BRIDGE" up
    ip -n "$MH_PREFIX$i" addr add "$(mh_ip "$i")/24" dev eth0
    ip -n "$MH_PREFIX$i" link set eth0 up
    ip -n "$MH_PREFIX$i" link set lo up
  done
}

mh_setup() {
  local n=$1 i
  mh_check_tools || return 1
  MH_HOSTS=$n
  ip link add "$MH_BRIDGE" type bridge
  ip addr add 198.18.0.1/24 dev "$MH_BRIDGE"
  ip link set "$MH_BRIDGE" up
  if command -v iptables >/dev/null && iptables -C FORWARD -i "$MH_BRIDGE" -o "$MH_BRIDGE" -j ACCEPT 2>/dev/null; then
    :
  elif command -v iptables >/dev/null; then
    # A FORWARD policy of DROP (e.g. Docker's) would drop traffic bridged between the hosts.
    iptables -I FORWARD -i "$MH_BRIDGE" -o "$MH_BRIDGE" -j ACCEPT && MH_FORWARD_RULE=1
  fi
  for i in $(seq 1 "$n"); do
    ip netns add "$MH_PREFIX$i"
    ip link add "gcmh-v$i" type veth peer name eth0 netns "$MH_PREFIX$i"
    ip link set "gcmh-v$i" master "$MH_BRIDGE" up
    ip -n "$MH_PREFIX$i" addr add "$(mh_ip "$i")/24" dev eth0
    ip -n "$MH_PREFIX$i" link set eth0 up
    ip -n "$MH_PREFIX$i" link set lo up
  done
}

# on_host <i> <log> <command...>: runs the command in host i's namespaces, in the background;
# its pid goes to MH_HOST_PIDS.
on_host() {
  local i=$1 log=$2
  shift 2
  local hosts_file
  hosts_file=$(mktemp /tmp/gcmh-hosts.XXXXXX)
  MH_HOSTS_FILES+=("$hosts_file")
  { echo "127.0.0.1 localhost"; echo "$(mh_ip "$i") gcmh-host$i"; } > "$hosts_file"
  ip netns exec "$MH_PREFIX$i" unshare --mount --uts --ipc --propagation private bash -c '
    set -e
    hostname "gcmh-host'"$i"'"
    mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm
    mount --bind "'"$hosts_file"'" /etc/hosts
    exec "$@"' on-host "$@" > "$log" 2>&1 &
  MH_HOST_PIDS+=($!)
}

mh_cleanup() {
  local p
  for p in "${MH_HOST_PIDS[@]}"; do
    # The namespace's processes: the command and what it spawned (executors, orted).
    pkill -KILL -P "$p" 2>/dev/null || true
    kill -KILL "$p" 2>/dev/null || true
    # Reaped here, quietly: else bash reports each as "line N: PID Killed ip netns exec ..." later.
    wait "$p" 2>/dev/null || true
  done
  local i
  for i in $(seq $((1 - MH_ISOLATED)) "$MH_HOSTS"); do
    if [ -e "/run/netns/$MH_PREFIX$i" ]; then
      # Whatever still runs in the namespace (an executor a Worker started) goes with it.
      for p in $(ip netns pids "$MH_PREFIX$i" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
      ip netns del "$MH_PREFIX$i" 2>/dev/null || true
    fi
    [ "$MH_ISOLATED" = 1 ] || ip link del "gcmh-v$i" 2>/dev/null || true
  done
  if [ "$MH_ISOLATED" = 1 ]; then
    ip netns del "$MH_SWITCH" 2>/dev/null || true   # the bridge and the veths' switch ends go with it
  else
    ip link del "$MH_BRIDGE" 2>/dev/null || true
  fi
  if [ "$MH_FORWARD_RULE" = 1 ]; then
    iptables -D FORWARD -i "$MH_BRIDGE" -o "$MH_BRIDGE" -j ACCEPT 2>/dev/null || true
  fi
  rm -f "${MH_HOSTS_FILES[@]}" 2>/dev/null || true
}
