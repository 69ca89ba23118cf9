#!/usr/bin/env bash
# The sources the kernel fatbin is built from, and the record that ties the checked-in prebuilt
# fatbin to them (prebuilt/gpucoll_kernels.sha256, in sha256sum's format: one line per source, one
# for the fatbin itself).
#   kernel-sources.sh list            the sources, relative to native-kernels/
#   kernel-sources.sh record          writes the record for the current sources and prebuilt fatbin
#   kernel-sources.sh check [reason]  fails, naming each difference, unless the prebuilt fatbin and
#                                     the sources are the ones recorded
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
record=prebuilt/gpucoll_kernels.sha256
fatbin=prebuilt/gpucoll_kernels.fatbin.xz

sources() {
  { ls src/*.cu; ls include/gpucoll/*; echo scripts/build-fatbin.sh; } | LC_ALL=C sort
}

case "${1:?usage: kernel-sources.sh list|record|check [reason]}" in
  list)
    sources
    ;;
  record)
    { sources; echo "$fatbin"; } | xargs sha256sum > "$record"
    cat "$record"
    ;;
  check)
    reason="${2:-no nvcc}"
    fail() {
      echo "ERROR: gpucoll-native-kernels cannot build gpucoll_kernels.fatbin: $reason, and $1" >&2
      echo "  Install nvcc (CUDA 13.0+; set NVCC=/path/to/nvcc, CUDA_HOME, or -Dnvcc=/path/to/nvcc)," >&2
      echo "  or, on a machine with nvcc, refresh the prebuilt fatbin: native-kernels/scripts/refresh-prebuilt.sh" >&2
      exit 2
    }
    [ -f "$fatbin" ] && [ -f "$record" ] || fail "the prebuilt $fatbin or its record $record is missing."
    problems=()
    while read -r want path; do
      if [ ! -f "$path" ]; then
        problems+=("$path (recorded, now missing)")
      elif [ "$(sha256sum "$path" | cut -d' ' -f1)" != "$want" ]; then
        problems+=("$path (changed)")
      fi
    done < "$record"
    while read -r path; do
      grep -q "  $path\$" "$record" || problems+=("$path (new)")
    done < <(sources)
    if [ "${#problems[@]}" -gt 0 ]; then
      fail "the prebuilt fatbin was not built from the current sources: $(printf '%s; ' "${problems[@]}" | sed 's/; $//')."
    fi
    ;;
  *)
    echo "usage: kernel-sources.sh list|record|check [reason]" >&2
    exit 2
    ;;
esac
