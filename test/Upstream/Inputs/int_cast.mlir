shard.grid @grid(shape = 2)
func.func @f(%x: tensor<4xi8>) -> tensor<4xf32> {
  %s = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4xi8>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%xs : tensor<4xi8>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: i8, %out: f32):
      %f = arith.sitofp %in : i8 to f32
      linalg.yield %f : f32
  } -> tensor<4xf32>
  %ys = shard.shard %y to %s : tensor<4xf32>
  return %ys : tensor<4xf32>
}
