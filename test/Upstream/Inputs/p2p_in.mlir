// Communication with a root or a peer (gather, scatter, send / recv, shift),
// a min all-reduce and insert_slice: functions a compiler (or a hand-written
// partition) may express with them. Their partitioned forms are in
// p2p_part.mlir. Rows are split over both axes of a 2x2 grid (block index
// 2 * c0 + c1).
shard.grid @grid(shape = 2x2)

func.func @gather_bcast(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x4xf32>
  %y = tosa.exp %xs : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %ys = shard.shard %y to %r : tensor<8x4xf32>
  return %ys : tensor<8x4xf32>
}

func.func @scatter(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<8x4xf32>
  %y = tosa.exp %xs : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  return %ys : tensor<8x4xf32>
}

// Blocks swapped in pairs: (0 1) (2 3).
func.func @swap_shift(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x4xf32>
  %b0 = tensor.extract_slice %xs[0, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %b1 = tensor.extract_slice %xs[2, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %b2 = tensor.extract_slice %xs[4, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %b3 = tensor.extract_slice %xs[6, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %y = tensor.concat dim(0) %b1, %b0, %b3, %b2 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  return %ys : tensor<8x4xf32>
}

func.func @swap_p2p(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<8x4xf32>
  %b0 = tensor.extract_slice %xs[0, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %b1 = tensor.extract_slice %xs[2, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %b2 = tensor.extract_slice %xs[4, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %b3 = tensor.extract_slice %xs[6, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %y = tensor.concat dim(0) %b1, %b0, %b3, %b2 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  return %ys : tensor<8x4xf32>
}

func.func @colmin(%x: tensor<4x4xf32>) -> tensor<4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x4xf32>
  %inf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%inf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%xs : tensor<4x4xf32>) outs(%f : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %v = arith.minimumf %in, %acc : f32
      linalg.yield %v : f32
    }
  %ms = shard.shard %m to %r : tensor<4xf32>
  return %ms : tensor<4xf32>
}

func.func @insert(%a: tensor<8x2xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %as = shard.shard %a to %s : tensor<8x2xf32>
  %bs = shard.shard %b to %s : tensor<8x4xf32>
  %y = tensor.insert_slice %as into %bs[0, 1] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  return %ys : tensor<8x4xf32>
}

func.func @pad(%a: tensor<8x2xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %as = shard.shard %a to %s : tensor<8x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = tensor.insert_slice %as into %z[0, 2] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x4xf32>
  %ys = shard.shard %y to %s : tensor<8x4xf32>
  return %ys : tensor<8x4xf32>
}
