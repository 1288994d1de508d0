// Rows split over grid axis 1, exp, then replicated: the partitioner
// gathers the rows over axis 1.
shard.grid @grid(shape = 2x2)

func.func @gather(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %s = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x4xf32>
  %xa = shard.shard %xs to %s annotate_for_users : tensor<4x4xf32>
  %e = tosa.exp %xa : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %es = shard.shard %e to %s : tensor<4x4xf32>
  %er = shard.shard %es to %r annotate_for_users : tensor<4x4xf32>
  return %er : tensor<4x4xf32>
}
