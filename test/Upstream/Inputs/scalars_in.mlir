// Scalars of data, tensor.extract / insert at constant indices, tensor.pad
// with a constant (docs/shard.md): the annotated inputs.
shard.grid @g(shape = 2)

// Two elements of a split vector, added: a replicated scalar.
func.func @extract_sum(%x: tensor<8xf32>) -> f32 {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %s : tensor<8xf32>
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %a = tensor.extract %x0[%c0] : tensor<8xf32>
  %b = tensor.extract %x0[%c7] : tensor<8xf32>
  %r = arith.addf %a, %b : f32
  return %r : f32
}

// A scalar argument scales a split tensor; an element set, then padded.
func.func @insert_pad(%x: tensor<4x4xf32>, %k: f32) -> tensor<6x4xf32> {
  %r = shard.sharding @g split_axes = [[]] : !shard.sharding
  %x0 = shard.shard %x to %r : tensor<4x4xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %k2 = arith.mulf %k, %k : f32
  %y = tensor.insert %k2 into %x0[%c1, %c2] : tensor<4x4xf32>
  %half = arith.constant 0.5 : f32
  %p = tensor.pad %y low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %half : f32
  } : tensor<4x4xf32> to tensor<6x4xf32>
  %p0 = shard.shard %p to %r : tensor<6x4xf32>
  return %p0 : tensor<6x4xf32>
}
