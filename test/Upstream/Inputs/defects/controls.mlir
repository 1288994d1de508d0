// Correct partitions of the defects' shapes, each proven: a sum and a max of
// one generic over an unsplit reduction dimension; a batched matmul (a
// linalg named op, read as upstream's generalization) split along its batch.
shard.grid @g(shape = 2)
#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i)>
func.func @sum_and_max_rows(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<4x6xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#in, #out, #out],
                         iterator_types = ["parallel", "reduction"]}
      ins(%xs : tensor<4x6xf32>) outs(%f0, %f1 : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %acc_sum: f32, %acc_max: f32):
    %1 = arith.addf %a, %acc_sum : f32
    %2 = arith.maximumf %a, %acc_max : f32
    linalg.yield %1, %2 : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %o0 = shard.shard %r#0 to %s : tensor<4xf32>
  %o1 = shard.shard %r#1 to %s : tensor<4xf32>
  return %o0, %o1 : tensor<4xf32>, tensor<4xf32>
}
func.func @batch_matmul_batch_split(%a: tensor<2x4x8xf32>, %b: tensor<2x8x3xf32>) -> tensor<2x4x3xf32> {
  %sb = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %a1 = shard.shard %a to %sb annotate_for_users : tensor<2x4x8xf32>
  %b1 = shard.shard %b to %sb annotate_for_users : tensor<2x8x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %c = linalg.batch_matmul ins(%a1, %b1 : tensor<2x4x8xf32>, tensor<2x8x3xf32>) outs(%f : tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %c1 = shard.shard %c to %sb : tensor<2x4x3xf32>
  return %c1 : tensor<2x4x3xf32>
}
// tosa.negate carries zero points, which tosa-to-linalg passes to its
// generic under a constant (broadcast) map and a float body never reads.
func.func @negate_zero_points(%x: tensor<4x6xf32>, %zp: tensor<1xf32>) -> tensor<4x6xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<4x6xf32>
  %zs = shard.shard %zp to %rep annotate_for_users : tensor<1xf32>
  %n = tosa.negate %xs, %zs, %zs : (tensor<4x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x6xf32>
  %n1 = shard.shard %n to %s : tensor<4x6xf32>
  return %n1 : tensor<4x6xf32>
}
