// Rows resharded to rows with halos of 1 (shard_import_refusals.test); the
// partitioned module (halo_wide_part.mlir) exchanges halos of 3 around a
// core of 0 rows.
shard.grid @g(shape = 2)
func.func @wide(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s : tensor<8x6xf32>
  %h = shard.sharding @g split_axes = [[0]] halo_sizes = [1, 1] : !shard.sharding
  %x1 = shard.shard %x0 to %h : tensor<8x6xf32>
  %r = shard.shard %x1 to %h annotate_for_users : tensor<8x6xf32>
  return %r : tensor<8x6xf32>
}
