// Uneven shards (sharded_dims_offsets): rows 0-2 on process 0, rows 3-7 on
// process 1. The partitioned function has dynamic local types; each process
// is specialized to its own block.
shard.grid @g(shape = 2)
func.func @uneven_abs(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 3, 8] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x4xf32>
  %xa = shard.shard %xs to %s annotate_for_users : tensor<8x4xf32>
  %y = tosa.abs %xa : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  %yr = shard.shard %ys to %s annotate_for_users : tensor<8x4xf32>
  return %yr : tensor<8x4xf32>
}
func.func @uneven_tanh_chain(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 5, 8] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x4xf32>
  %xa = shard.shard %xs to %s annotate_for_users : tensor<8x4xf32>
  %y = tosa.tanh %xa : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  %ya = shard.shard %ys to %s annotate_for_users : tensor<8x4xf32>
  %z = tosa.sigmoid %ya : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %zs = shard.shard %z to %s : tensor<8x4xf32>
  %zr = shard.shard %zs to %s annotate_for_users : tensor<8x4xf32>
  return %zr : tensor<8x4xf32>
}
