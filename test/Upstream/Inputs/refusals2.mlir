// Constructs the shard-partition import refuses by name; one function each,
// replicated so that the file is its own partition.
shard.grid @grid(shape = 2)

func.func @prod_allreduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xf32>
  %y = shard.all_reduce %xs on @grid grid_axes = [0] reduction = product : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @avg_int(%x: tensor<4xi8>) -> tensor<4xi8> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xi8>
  %y = shard.all_reduce %xs on @grid grid_axes = [0] reduction = average : tensor<4xi8> -> tensor<4xi8>
  return %y : tensor<4xi8>
}

func.func @rs_max(%x: tensor<4xf32>) -> tensor<2xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xf32>
  %y = shard.reduce_scatter %xs on @grid grid_axes = [0] reduction = max scatter_axis = 0 : tensor<4xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

func.func @strided(%x: tensor<4xf32>) -> tensor<2xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xf32>
  %y = tensor.extract_slice %xs[0] [2] [2] : tensor<4xf32> to tensor<2xf32>
  return %y : tensor<2xf32>
}

func.func @min_fill(%x: tensor<4x2xf32>) -> tensor<4xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4x2xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%xs : tensor<4x2xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.minimumf %in, %acc : f32
      linalg.yield %v : f32
    }
  return %m : tensor<4xf32>
}

func.func @index_mul(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xf32>
  %c2 = arith.constant 2 : index
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%xs : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %i = linalg.index 0 : index
      %j = arith.muli %i, %c2 : index
      %c = arith.index_cast %j : index to i32
      %f = arith.sitofp %c : i32 to f32
      %s = arith.addf %in, %f : f32
      linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @band_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xf32>
  %y = shard.all_reduce %xs on @grid grid_axes = [0] reduction = bitwise_and : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @gather_in_input(%x: tensor<4xf32>) -> tensor<8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<4xf32>
  %y = shard.gather %xs on @grid grid_axes = [0] gather_axis = 0 root = [0] : (tensor<4xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

func.func @insert_strided(%x: tensor<2xf32>, %d: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<2xf32>
  %ds = shard.shard %d to %r : tensor<4xf32>
  %y = tensor.insert_slice %xs into %ds[0] [2] [2] : tensor<2xf32> into tensor<4xf32>
  return %y : tensor<4xf32>
}
