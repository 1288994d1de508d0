shard.grid @g(shape = 2)
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g split_axes = [[0]] halo_sizes = [5, 1] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8xf32>
  return %xs : tensor<8xf32>
}
