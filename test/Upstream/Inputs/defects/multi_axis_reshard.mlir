// Reshards on a 2x2 grid that involve both grid axes. Each function returns x
// (tensor<8x8xf32>) under the target sharding, whose local block is
//   @to_cols:  [[0, 1]]   -> [[], [0, 1]]  : 8x2
//   @swap:     [[0], [1]] -> [[1], [0]]    : 4x4
//   @merge:    [[0], [1]] -> [[0, 1]]      : 2x8
shard.grid @g(shape = 2x2)
func.func @to_cols(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0, 1]] : !shard.sharding
  %s1 = shard.sharding @g split_axes = [[], [0, 1]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  %2 = shard.shard %1 to %s1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
func.func @swap(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %s1 = shard.sharding @g split_axes = [[1], [0]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  %2 = shard.shard %1 to %s1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
func.func @merge(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %s1 = shard.sharding @g split_axes = [[0, 1]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  %2 = shard.shard %1 to %s1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
