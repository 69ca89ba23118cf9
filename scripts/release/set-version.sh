#!/usr/bin/env bash
# Sets the version of every module: the root POM's own version and each module's <parent> version
# (every module inherits its version from its parent). The one tool for version changes; see
# docs/releasing.md.
#   scripts/release/set-version.sh 0.1.0            (a release)
#   scripts/release/set-version.sh 0.1.1-SNAPSHOT   (the next development version)
set -euo pipefail
cd "$(dirname "$0")/../.."
new=${1:?usage: scripts/release/set-version.sh NEW_VERSION}
[[ $new =~ ^[0-9]+\.[0-9]+\.[0-9]+(-SNAPSHOT)?$ ]] || { echo "set-version.sh: '$new' is not MAJOR.MINOR.PATCH[-SNAPSHOT]" >&2; exit 2; }
old=$(sed -n '0,/<artifactId>gpucoll-parent<\/artifactId>/d; s:^  <version>\(.*\)</version>.*:\1:p' pom.xml | head -1)
[ -n "$old" ] || { echo "set-version.sh: cannot read the version of pom.xml" >&2; exit 2; }
mapfile -t poms < <(git ls-files '*pom.xml')
for f in "${poms[@]}"; do
  if [ "$f" = pom.xml ]; then
    # The root's own version: the first <version> after its artifactId, at two spaces of indent.
    sed -i "0,/^  <version>$old<\/version>/s//  <version>$new<\/version>/" "$f"
  else
    # The <parent> reference, on one line or several.
    OLD="$old" NEW="$new" perl -0pi -e \
      's{(<parent>\s*<groupId>dev\.gpucoll</groupId>\s*<artifactId>gpucoll-[a-z-]*parent</artifactId>\s*)<version>\Q$ENV{OLD}\E</version>}{$1<version>$ENV{NEW}</version>}' "$f"
  fi
done
missed=$(git grep -L -F "<version>$new</version>" -- '*pom.xml' || true)
if [ -n "$missed" ]; then
  echo "set-version.sh: these POMs do not name $new (a parent written another way?): $missed" >&2
  exit 1
fi
echo "version $old -> $new in ${#poms[@]} POMs"
