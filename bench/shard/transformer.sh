#!/usr/bin/env bash
# Issue 33's transformer block (test/Upstream/Inputs/transformer_block*.mlir)
# over 64 processes (8x8) and 1,024 processes (32x32): partitioned by MLIR's
# sharding-propagation + shard-partition and validated by tv in one tv-opt
# run. Prints the verdict, wall time and peak RSS of each.
# Usage: bench/shard/transformer.sh [build]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
inputs=$here/../../test/Upstream/Inputs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for g in 8 32; do
  n=$((g * g))
  # Megatron dp x tp: batch g over axis 0, g heads and 2g MLP features over axis 1.
  sed "s/@GRID@/${g}x${g}/g; s/@B@/$g/g; s/@N@/$g/g; s/@F@/$((2 * g))/g" \
    "$inputs/transformer_block.mlir" > "$tmp/tb.mlir"
  # Sequence parallel: sequence g over axis 0, batch 2.
  sed "s/@GRID@/${g}x${g}/g; s/@B@/2/g; s/@S@/$g/g; s/@N@/$g/g; s/@F@/$((2 * g))/g" \
    "$inputs/transformer_block_sp.mlir" > "$tmp/sp.mlir"
  for v in tb sp; do
    /usr/bin/time -f "$n processes (${g}x${g}, $v): %e s wall, %M KB peak" \
      "$build/bin/tv-opt" "$tmp/$v.mlir" --tv-validate-shard-partition -o /dev/null \
      2> "$tmp/err"
    grep '^tv-verdict' "$tmp/err"; tail -1 "$tmp/err"
  done
done
