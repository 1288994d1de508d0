#!/usr/bin/env bash
# Regenerates the reference docs (dialect, ops, passes) from ODS into
# docs/reference/. Run after changing a .td file; CI checks they are current.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ninja -C "$root/build" mlir-doc >/dev/null
mkdir -p "$root/docs/reference"
cp "$root"/build/docs/TrainVerify/TVDialect.md \
   "$root"/build/docs/TrainVerify/TVPasses.md \
   "$root"/build/docs/TrainVerify/TVOpInterfaces.md "$root/docs/reference/"
