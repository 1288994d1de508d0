// A grid of dynamic shape and a function with dynamic dimensions, each
// resharded and computed on: validated for static sizes (docs/shard.md,
// "Dynamic grids and dimensions").
shard.grid @flex(shape = ?)
shard.grid @rows(shape = 2x2)

// Rows split over a grid of unknown size, then columns: an all_to_all.
func.func @flex_reshard(%x: tensor<12x8xf32>, %y: tensor<12x8xf32>) -> tensor<12x8xf32> {
  %s0 = shard.sharding @flex split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s0 : tensor<12x8xf32>
  %y0 = shard.shard %y to %s0 : tensor<12x8xf32>
  %e = tensor.empty() : tensor<12x8xf32>
  %sum = linalg.add ins(%x0, %y0 : tensor<12x8xf32>, tensor<12x8xf32>) outs(%e : tensor<12x8xf32>) -> tensor<12x8xf32>
  %s1 = shard.sharding @flex split_axes = [[], [0]] : !shard.sharding
  %r = shard.shard %sum to %s1 : tensor<12x8xf32>
  return %r : tensor<12x8xf32>
}

// Batch rows of unknown count over a static 2x2 grid, then gathered on
// the second axis.
func.func @dyn_rows(%x: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %s0 = shard.sharding @rows split_axes = [[0, 1]] : !shard.sharding
  %x0 = shard.shard %x to %s0 : tensor<?x6xf32>
  %t = tosa.tanh %x0 : (tensor<?x6xf32>) -> tensor<?x6xf32>
  %s1 = shard.sharding @rows split_axes = [[0]] : !shard.sharding
  %r = shard.shard %t to %s1 : tensor<?x6xf32>
  return %r : tensor<?x6xf32>
}
