// Adds each row's global index to x, rows split over 2 processes.
#id = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
func.func @idx(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%xs : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %i = linalg.index 0 : index
      %c = arith.index_cast %i : index to i32
      %f = arith.sitofp %c : i32 to f32
      %t = arith.addf %in, %f : f32
      linalg.yield %t : f32
  } -> tensor<4x4xf32>
  %ys = shard.shard %y to %s : tensor<4x4xf32>
  return %ys : tensor<4x4xf32>
}
