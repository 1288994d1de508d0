#!/usr/bin/env bash
# Issue 15's figures: a two-matmul MLP over a 64-process grid (tp64) and a
# 1,024-process 2-D grid (dp32 x tp32), each partitioned by MLIR's
# shard-partition and validated by tv in one tv-opt run
# (--tv-validate-shard-partition), and the same with the partitioner's
# all-reduce dropped (a counterexample). Usage: bench/shard/run.sh [build]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for shape in "1 64" "32 32"; do
  set -- $shape
  n=$(($1 * $2))
  "$here/gen_mlp.sh" "$1" "$2" > "$tmp/mlp.mlir"
  /usr/bin/time -f "$n processes (dp$1 x tp$2), validate: %e s wall, %M KB peak" \
    "$build/bin/tv-opt" "$tmp/mlp.mlir" --tv-validate-shard-partition -o /dev/null
  # The partitioned program without its all-reduce: a counterexample.
  mlir-opt-22 --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition,canonicalize,cse))' \
    "$tmp/mlp.mlir" -o "$tmp/part.mlir"
  src=$(grep -o 'shard.all_reduce %[0-9a-z_]*' "$tmp/part.mlir" | head -1 | cut -d' ' -f2)
  sed "s/return %all_reduce :/return $src :/" "$tmp/part.mlir" > "$tmp/bad.mlir"
  /usr/bin/time -f "$n processes, all-reduce dropped, import + verify: %e s wall, %M KB peak" \
    sh -c "'$build/bin/tv-translate' --import-shard-partition '$tmp/mlp.mlir' --partitioned '$tmp/bad.mlir' | '$build/bin/tv-opt' --tv-verify-pipeline -o /dev/null 2>&1 | tail -1" || true
done
