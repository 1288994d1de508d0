// dense_constant_in.mlir partitioned by hand: rows over 2 processes.
shard.grid @g(shape = 2)
func.func @scale_rows(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
