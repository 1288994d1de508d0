// Collectives that shard-partition does not emit for these functions but a
// compiler (or a hand-written partition) may use; their partitioned forms
// are in collectives_part.mlir.
shard.grid @grid(shape = 2)

func.func @rs(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %sa = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sb = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a1 = shard.shard %a to %sa : tensor<4x8xf32>
  %b1 = shard.shard %b to %sb : tensor<8x4xf32>
  %z = tensor.empty() : tensor<4x4xf32>
  %c0 = arith.constant 0.0 : f32
  %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%a1, %b1 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%zf : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = shard.shard %m to %sb : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

func.func @bc(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %x1 = shard.shard %x to %s : tensor<4xf32>
  %y = tosa.exp %x1 : (tensor<4xf32>) -> tensor<4xf32>
  %r = shard.shard %y to %s : tensor<4xf32>
  return %r : tensor<4xf32>
}
