#!/usr/bin/env bash
# Regenerates the reference docs (dialect, ops, passes) from ODS, and the
# bug classes of --tv-inject-bug from their registry, into docs/reference/. Run after changing a .td file; CI checks they are current.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ninja -C "$root/build" mlir-doc tv-opt >/dev/null
mkdir -p "$root/docs/reference"
cp "$root"/build/docs/TrainVerify/TVDialect.md \
   "$root"/build/docs/TrainVerify/TVPasses.md \
   "$root"/build/docs/TrainVerify/TVOpInterfaces.md "$root/docs/reference/"
"$root/build/bin/tv-opt" --tv-list-bug-classes > "$root/docs/reference/BugClasses.md"
