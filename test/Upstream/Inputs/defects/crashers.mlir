// Inputs that crashed tv's import (SIGSEGV in lineagesOf): a function with
// an index argument nothing reads, and one that returns a sharding.
shard.grid @g(shape = 2)
func.func @index_arg(%a: tensor<4xf32>, %i: index) -> tensor<4xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %a1 = shard.shard %a to %s : tensor<4xf32>
  %r = shard.shard %a1 to %s annotate_for_users : tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @sharding_result(%a: tensor<4xf32>) -> !shard.sharding {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  return %s : !shard.sharding
}
