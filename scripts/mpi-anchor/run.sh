#!/usr/bin/env bash
# Builds and runs the Open MPI anchor (2 ranks over shared memory) and prints its table.
# Open MPI is an optional tool, not a dependency: installed from Debian's packages when missing.
#   scripts/mpi-anchor/run.sh [ranks] [largest message in bytes]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ranks="${1:-2}"
max_bytes="${2:-}"
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "installing Open MPI (openmpi-bin libopenmpi-dev) from Debian's packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
out="${TMPDIR:-/tmp}/gpucoll-mpi-anchor"
mkdir -p "$out"
mpicc -O2 -o "$out/collectives_bench" "$here/collectives_bench.c"
mpirun --version | sed -n 1p >&2
# Shared memory only (vader/sm BTL), as the host backend uses; root and oversubscription allowed
# so it also runs in containers and on 2-core machines.
exec mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
  --mca btl self,vader --mca pml ob1 "$out/collectives_bench" $max_bytes
