// Refusals of the scalar and tensor ops and of a function without results
// (shard_import_refusals.test): input and partitioned module are this file.
shard.grid @g(shape = 2)

func.func @extract_outside(%x: tensor<4xf32>) -> f32 {
  %c9 = arith.constant 9 : index
  %e = tensor.extract %x[%c9] : tensor<4xf32>
  return %e : f32
}

func.func @pad_dynamic(%x: tensor<4xf32>) -> tensor<5xf32> {
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[%c1] high[0] {
  ^bb0(%i: index):
    tensor.yield %z : f32
  } : tensor<4xf32> to tensor<5xf32>
  return %p : tensor<5xf32>
}

func.func @nothing(%x: tensor<4xf32>) {
  return
}
