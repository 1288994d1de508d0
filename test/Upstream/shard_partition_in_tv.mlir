// tv reads MLIR's shard IR with MLIR itself and runs upstream's partitioner
// in-process: the same pipeline in mlir-opt-22 and in tv-opt gives the same
// program (issue 15, step 1; docs/shard-validation.md).
// RUN: mlir-opt-22 --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition,canonicalize,cse))' %s -o %t.upstream.mlir
// RUN: tv-opt --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition,canonicalize,cse))' %s --mlir-print-debuginfo=false -o %t.tv.mlir
// RUN: diff %t.upstream.mlir %t.tv.mlir
// RUN: FileCheck %s < %t.tv.mlir
// The partitioned program: rows over axis 0 (data parallel), the hidden
// features over axis 1 (a column- then row-parallel pair), one all-reduce
// over axis 1 for the row-parallel partial sums.
// CHECK-LABEL: func.func @dp_tp_mlp(
// CHECK-SAME:    %{{.*}}: tensor<2x8xf32>, %{{.*}}: tensor<8x8xf32>, %{{.*}}: tensor<8x8xf32>) -> tensor<2x8xf32>
// CHECK:         linalg.matmul {{.*}} -> tensor<2x8xf32>
// CHECK:         math.exp
// CHECK:         linalg.matmul {{.*}} -> tensor<2x8xf32>
// CHECK:         shard.all_reduce {{.*}} on @grid grid_axes = [1]
// CHECK-NOT:     shard.all_reduce
#id = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2x2)

func.func @dp_tp_mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>,
                     %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %col = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %row = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %xs = shard.shard %x to %rows : tensor<4x8xf32>
  %w1s = shard.shard %w1 to %col : tensor<8x16xf32>
  %w2s = shard.shard %w2 to %row : tensor<16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x16xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%xs, %w1s : tensor<4x8xf32>, tensor<8x16xf32>)
                     outs(%f0 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x16xf32>) outs(%e1 : tensor<4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %t = math.exp %in : f32
      linalg.yield %t : f32
  } -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%a, %w2s : tensor<4x16xf32>, tensor<16x8xf32>)
                     outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ys = shard.shard %y to %rows : tensor<4x8xf32>
  return %ys : tensor<4x8xf32>
}
