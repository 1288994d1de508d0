// What a partitioner makes of scalars_in.mlir, written by hand (the shard
// dialect's partitioner has no model of tensor.extract, insert or pad).
shard.grid @g(shape = 2)

func.func @extract_sum(%x: tensor<4xf32>) -> f32 {
  %g = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %a = tensor.extract %g[%c0] : tensor<8xf32>
  %b = tensor.extract %g[%c7] : tensor<8xf32>
  %r = arith.addf %a, %b : f32
  return %r : f32
}

func.func @insert_pad(%x: tensor<4x4xf32>, %k: f32) -> tensor<6x4xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %k2 = arith.mulf %k, %k : f32
  %y = tensor.insert %k2 into %x[%c1, %c2] : tensor<4x4xf32>
  %half = arith.constant 0.5 : f32
  %p = tensor.pad %y low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %half : f32
  } : tensor<4x4xf32> to tensor<6x4xf32>
  return %p : tensor<6x4xf32>
}
