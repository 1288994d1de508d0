shard.grid @g(shape = 2)
func.func @f(%x: tensor<8xi8>) -> tensor<8xi8> {
  %r = shard.all_reduce %x on @g grid_axes = [0] reduction = max : tensor<8xi8> -> tensor<8xi8>
  return %r : tensor<8xi8>
}
