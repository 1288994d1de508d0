#!/usr/bin/env bash
# An annotated two-matmul MLP (Megatron: column- then row-parallel) over a
# grid of shape DPxTP: rows of x over axis 0, the hidden features over axis
# 1. Usage: gen_mlp.sh DP TP > mlp.mlir
set -euo pipefail
dp=$1 tp=$2
b=$((dp * 2)) h=64 f=$((tp * 4))
if [ "$dp" -gt 1 ]; then grid="${dp}x${tp}"; rows="[[0]]"; col="[[], [1]]"; row="[[1]]"
else grid="${tp}"; rows="[[]]"; col="[[], [0]]"; row="[[0]]"; fi
cat <<MLIR
#id = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = ${grid})
func.func @mlp(%x: tensor<${b}x${h}xf32>, %w1: tensor<${h}x${f}xf32>,
               %w2: tensor<${f}x${h}xf32>) -> tensor<${b}x${h}xf32> {
  %rows = shard.sharding @grid split_axes = ${rows} : !shard.sharding
  %col = shard.sharding @grid split_axes = ${col} : !shard.sharding
  %row = shard.sharding @grid split_axes = ${row} : !shard.sharding
  %xs = shard.shard %x to %rows : tensor<${b}x${h}xf32>
  %w1s = shard.shard %w1 to %col : tensor<${h}x${f}xf32>
  %w2s = shard.shard %w2 to %row : tensor<${f}x${h}xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<${b}x${f}xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<${b}x${f}xf32>) -> tensor<${b}x${f}xf32>
  %hh = linalg.matmul ins(%xs, %w1s : tensor<${b}x${h}xf32>, tensor<${h}x${f}xf32>)
                      outs(%f0 : tensor<${b}x${f}xf32>) -> tensor<${b}x${f}xf32>
  %e1 = tensor.empty() : tensor<${b}x${f}xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%hh : tensor<${b}x${f}xf32>) outs(%e1 : tensor<${b}x${f}xf32>) {
    ^bb0(%in: f32, %out: f32):
      %t = math.tanh %in : f32
      linalg.yield %t : f32
  } -> tensor<${b}x${f}xf32>
  %e2 = tensor.empty() : tensor<${b}x${h}xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<${b}x${h}xf32>) -> tensor<${b}x${h}xf32>
  %y = linalg.matmul ins(%a, %w2s : tensor<${b}x${f}xf32>, tensor<${f}x${h}xf32>)
                     outs(%f2 : tensor<${b}x${h}xf32>) -> tensor<${b}x${h}xf32>
  %ys = shard.shard %y to %rows : tensor<${b}x${h}xf32>
  return %ys : tensor<${b}x${h}xf32>
}
MLIR
