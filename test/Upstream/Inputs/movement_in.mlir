// Data movement (extract_slice, expand/collapse_shape, concat), a min
// reduction and a mean across processes; partitioned by hand in
// movement_part.mlir.
shard.grid @grid(shape = 2)

func.func @rowmin(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x8xf32>
  %inf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%inf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%xs : tensor<4x8xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.minimumf %in, %acc : f32
      linalg.yield %v : f32
    }
  %m2 = tensor.expand_shape %m [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
  %c = tensor.concat dim(1) %m2, %m2 : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  %sl = tensor.extract_slice %c[0, 1] [4, 1] [1, 1] : tensor<4x2xf32> to tensor<4x1xf32>
  %r = tensor.collapse_shape %sl [[0, 1]] : tensor<4x1xf32> into tensor<4xf32>
  %rs = shard.shard %r to %s : tensor<4xf32>
  return %rs : tensor<4xf32>
}

func.func @colmean(%x: tensor<2x4xf32>) -> tensor<4xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<2x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%xs : tensor<2x4xf32>) outs(%f : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %e2 = tensor.empty() : tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%sum : tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %half = arith.constant 0.5 : f32
      %v = arith.mulf %in, %half : f32
      linalg.yield %v : f32
  } -> tensor<4xf32>
  %ms = shard.shard %mean to %r : tensor<4xf32>
  return %ms : tensor<4xf32>
}
