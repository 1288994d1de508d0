// halo_wide_in.mlir partitioned by hand, with an update_halo whose halos
// are wider than the core they surround.
shard.grid @g(shape = 2)
func.func @wide(%x: tensor<4x6xf32>) -> tensor<6x6xf32> {
  %e = tensor.empty() : tensor<6x6xf32>
  %i = tensor.insert_slice %x into %e[1, 0] [4, 6] [1, 1] : tensor<4x6xf32> into tensor<6x6xf32>
  %u = shard.update_halo %i on @g split_axes = [[0]] halo_sizes = [3, 3] : tensor<6x6xf32>
  return %u : tensor<6x6xf32>
}
