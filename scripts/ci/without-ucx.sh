#!/usr/bin/env bash
# gpucoll-core's tests as on a machine without UCX, also where UCX is installed: in a private mount
# namespace UCX's libraries are deleted from an overlay over their directory, so JUCX's native library
# fails to load as it does without libucx0 ("libucp.so.0: cannot open shared object file"). Every test
# must pass, the UCX tests skipped (their count is printed), and a group across hosts must relay with
# the WARN that tells a user why and to install libucx0. Nothing outside the namespace changes.
# Needs root and util-linux's unshare; builds only gpucoll-api and gpucoll-core (-am: the reactor's
# artifacts need not be installed).
# About a minute on a 2-core machine (measured: 64 s at load 4, the modules compiled already).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" != --inside ]; then
  [ "$(id -u)" = 0 ] || { echo "needs root (a private mount namespace: unshare -m)" >&2; exit 2; }
  scratch=$(mktemp -d /tmp/gpucoll-without-ucx.XXXXXX)
  trap 'rm -rf "$scratch"' EXIT
  unshare -m --propagation private "$0" --inside "$scratch"
  exit 0
fi
scratch=$2

# Every directory the loader finds libucp.so.0 in (none on a machine without UCX: nothing to hide).
ldconfig -p | sed -n 's/^.*libucp\.so\.0 (.*) => //p' | xargs -r -n1 readlink -f | xargs -r -n1 dirname \
  | sort -u > "$scratch/dirs"
i=0
while read -r dir; do
  i=$((i + 1))
  mkdir -p "$scratch/$i"
  mount -t tmpfs tmpfs "$scratch/$i" # the overlay's upper layer must not itself be an overlay (containers)
  mkdir "$scratch/$i/upper" "$scratch/$i/work"
  mount -t overlay overlay -o "lowerdir=$dir,upperdir=$scratch/$i/upper,workdir=$scratch/$i/work" "$dir"
  # Deleting in the overlay leaves the real files alone; refuse anywhere else.
  [ "$(findmnt -n -o FSTYPE --mountpoint "$dir")" = overlay ] || { echo "no overlay on $dir" >&2; exit 1; }
  rm -rf "$dir"/libuc[mpst][._]* "$dir/ucx"
  echo "hidden in this mount namespace: $dir/libuc{p,t,s,m}*, $dir/ucx/"
done < "$scratch/dirs"
[ "$i" -gt 0 ] || echo "UCX is not installed here: nothing to hide"
if [ -e "$(ldconfig -p | sed -n 's/^.*libucp\.so\.0 (.*) => //p' | head -1)" ]; then
  echo "libucp.so.0 is still there" >&2
  exit 1
fi

reports=spark-plugin/gpucoll-core/target/surefire-reports
suffix=without-ucx # the reports of the run with UCX stay as they are
rm -f "$reports"/*-"$suffix".xml "$reports"/*-"$suffix".txt "$reports"/*-"$suffix"-output.txt
# A skip, not a failure, is what this run wants of every UCX test.
env -u GPUCOLL_REQUIRE_UCX mvn -B -ntp -q -pl spark-plugin/gpucoll-core -am test -Dsurefire.reportNameSuffix="$suffix"

counts=$(grep -h -o '<testsuite [^>]*>' "$reports"/TEST-*-"$suffix".xml | awk '
  function n(k) {
    return match($0, " " k "=\"[0-9]+\"") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 4) : 0
  }
  { t += n("tests"); f += n("failures"); e += n("errors"); s += n("skipped") }
  END { print t, f, e, s }')
read -r tests failures errors skipped <<< "$counts"
echo "gpucoll-core without UCX: Tests run: $tests, Failures: $failures, Errors: $errors, Skipped: $skipped"
if [ "$failures" != 0 ] || [ "$errors" != 0 ] || [ "$skipped" = 0 ]; then
  echo "expected no failures and the UCX tests skipped" >&2
  exit 1
fi
# Every skip is a UCX test's, naming the library that is missing and the package to install.
why='skipped: host-ucx needs UCX, .*libucp\.so\.0: cannot open shared object file.*apt-get install libucx0'
ucx_skips=$(cat "$reports"/TEST-*-"$suffix".xml | grep -c "<skipped .*$why" || true)
if [ "$ucx_skips" != "$skipped" ]; then
  echo "$((skipped - ucx_skips)) of the $skipped skips are not for a missing libucp.so.0" >&2
  exit 1
fi
echo "every skip is a UCX test's: libucp.so.0 cannot be loaded (apt-get install libucx0)"
# What a user without UCX sees: the relay, and why (HostUcxTest's group across hosts on auto).
warn=$(grep -h 'relays every payload' "$reports"/dev.gpucoll.core.host.HostUcxTest-"$suffix"-output.txt | head -1)
case "$warn" in
  *"UCX cannot be used in this process ("*"apt-get install libucx0"*)
    echo "the relay's WARN: ${warn%%; ranks \[1\]*}; ...";;
  *)
    echo "no relay WARN naming the missing UCX in HostUcxTest's output: '$warn'" >&2
    exit 1;;
esac
