// The sum of the 5 elements of x, with x split over 2 processes (blocks of
// 3 and 2 rows, or the sharding refused) and the sum replicated.
shard.grid @g(shape = 2)
func.func @sum5(%x: tensor<5xf32>) -> tensor<f32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<5xf32>
  %xu = shard.shard %xs to %s annotate_for_users : tensor<5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%xu : tensor<5xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%a: f32, %acc: f32) {
      %o = arith.addf %a, %acc : f32
      linalg.yield %o : f32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<f32>
  return %r1 : tensor<f32>
}
