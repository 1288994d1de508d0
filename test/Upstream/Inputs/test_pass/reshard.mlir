// Reshards on a grid of 2, written here: rows to columns, rows to
// replicated, replicated to columns.
shard.grid @g(shape = 2)

func.func @rows_to_cols(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<6x8xf32>
  %s1 = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}

func.func @rows_to_all(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<6x8xf32>
  %s1 = shard.sharding @g split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}

func.func @all_to_cols(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %s0 = shard.sharding @g split_axes = [[]] : !shard.sharding
  %0 = shard.shard %x to %s0 : tensor<6x8xf32>
  %s1 = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}
