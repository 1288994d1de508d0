// c = a @ b with the contraction dimension K = 8 split over 2 processes and
// c replicated: each process's product over its half of K is a partial sum,
// which needs an all-reduce (sum) over the grid.
shard.grid @g(shape = 2)
func.func @matmul_k_split(%a: tensor<1x4x8xf32>, %b: tensor<1x8x3xf32>, %zp: tensor<1xf32>) -> tensor<1x4x3xf32> {
  %sa = shard.sharding @g split_axes = [[], [], [0]] : !shard.sharding
  %sb = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %a1 = shard.shard %a to %sa annotate_for_users : tensor<1x4x8xf32>
  %b1 = shard.shard %b to %sb annotate_for_users : tensor<1x8x3xf32>
  %z1 = shard.shard %zp to %rep annotate_for_users : tensor<1xf32>
  %c = tosa.matmul %a1, %b1, %z1, %z1 : (tensor<1x4x8xf32>, tensor<1x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
  %c1 = shard.shard %c to %rep : tensor<1x4x3xf32>
  return %c1 : tensor<1x4x3xf32>
}
