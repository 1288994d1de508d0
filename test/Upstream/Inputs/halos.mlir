// Halos (docs/shard.md, "Halos"): a halo cell is the cell of the global
// tensor at its position, which a neighbour holds as core; past the grid's
// edge it is undefined.
shard.grid @line(shape = 4)
shard.grid @plane(shape = 2x2)

// An elementwise chain on rows with halos: each process computes its core
// rows and its halo rows (its neighbours' rows) again.
func.func @halo_chain(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %h = shard.sharding @line split_axes = [[0]] halo_sizes = [1, 1] : !shard.sharding
  %x0 = shard.shard %x to %h annotate_for_users : tensor<8x6xf32>
  %t = tosa.tanh %x0 : (tensor<8x6xf32>) -> tensor<8x6xf32>
  %t0 = shard.shard %t to %h : tensor<8x6xf32>
  %t1 = shard.shard %t0 to %h annotate_for_users : tensor<8x6xf32>
  %e = tosa.exp %t1 : (tensor<8x6xf32>) -> tensor<8x6xf32>
  %r = shard.shard %e to %h : tensor<8x6xf32>
  return %r : tensor<8x6xf32>
}

// Rows without halos resharded to rows with halos of 1 and 2: the
// partitioner places the core and exchanges the halos (update_halo).
func.func @halo_refresh(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %s = shard.sharding @line split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s : tensor<8x6xf32>
  %h = shard.sharding @line split_axes = [[0]] halo_sizes = [1, 2] : !shard.sharding
  %x1 = shard.shard %x0 to %h : tensor<8x6xf32>
  %r = shard.shard %x1 to %h annotate_for_users : tensor<8x6xf32>
  return %r : tensor<8x6xf32>
}

// The same on a 2-D grid, both dimensions with halos (corners from the
// diagonal neighbour).
func.func @halo_plane(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s = shard.sharding @plane split_axes = [[0], [1]] : !shard.sharding
  %x0 = shard.shard %x to %s : tensor<8x8xf32>
  %h = shard.sharding @plane split_axes = [[0], [1]] halo_sizes = [1, 1, 2, 1] : !shard.sharding
  %x1 = shard.shard %x0 to %h : tensor<8x8xf32>
  %r = shard.shard %x1 to %h annotate_for_users : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
