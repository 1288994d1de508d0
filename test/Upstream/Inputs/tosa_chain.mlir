// A chain of tosa elementwise ops on rows split over 2 processes, then
// gathered.
shard.grid @grid(shape = 2)

func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s : tensor<4x8xf32>
  %ys = shard.shard %y to %s : tensor<4x8xf32>
  %xa = shard.shard %xs to %s annotate_for_users : tensor<4x8xf32>
  %ya = shard.shard %ys to %s annotate_for_users : tensor<4x8xf32>
  %a = tosa.add %xa, %ya : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = tosa.sub %a, %ya : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = tosa.reciprocal %b : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = tosa.log %c : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = tosa.sigmoid %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %es = shard.shard %e to %s : tensor<4x8xf32>
  %er = shard.shard %es to %r annotate_for_users : tensor<4x8xf32>
  return %er : tensor<4x8xf32>
}
