#!/usr/bin/env bash
# mpirun's launch agent for the simulated hosts (--mca plm_rsh_agent): instead of ssh to
# 198.18.0.<10+i>, runs the command in host i's namespaces (netns.sh's layout).
#   ns-agent.sh [ssh options] <host> <command...>
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
i=$(( ${host##*.} - 10 ))
exec ip netns exec "${MH_PREFIX:-gcmh-h}$i" unshare --mount --uts --ipc --propagation private bash -c \
  'hostname gcmh-host'"$i"'; mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm; eval "$*"' agent "$@"
