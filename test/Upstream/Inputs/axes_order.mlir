shard.grid @g(shape = 2x2)
func.func @f(%x: tensor<2xf32>) -> tensor<8xf32> {
  %r = shard.all_gather %x on @g grid_axes = [1, 0] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
