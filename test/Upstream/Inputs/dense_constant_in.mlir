// A replicated dense constant (mlir-opt-22's partitioner exits 1, with no
// message, on a function holding one: this pair's partition is by hand).
shard.grid @g(shape = 2)
func.func @scale_rows(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s : tensor<4x3xf32>
  %w = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %r = shard.sharding @g split_axes = [[]] : !shard.sharding
  %w0 = shard.shard %w to %r annotate_for_users : tensor<3xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x0, %w0 : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  %y0 = shard.shard %y to %s : tensor<4x3xf32>
  return %y0 : tensor<4x3xf32>
}
