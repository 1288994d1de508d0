// One linalg.generic computing the row sum and the row max of x, reduced over
// dimension 1, which is split over 2 processes. Each result needs its own
// all-reduce: sum for %r#0, max for %r#1.
shard.grid @g(shape = 2)
#in = affine_map<(i, j) -> (i, j)>
#out = affine_map<(i, j) -> (i)>
func.func @sum_and_max(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
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
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %o0 = shard.shard %r#0 to %rep : tensor<4xf32>
  %o1 = shard.shard %r#1 to %rep : tensor<4xf32>
  return %o0, %o1 : tensor<4xf32>, tensor<4xf32>
}
