// Integer reductions over a dimension split across 2 processes, each
// combined with its identity (or, for maxsi_fill7, with 7). The partitioner
// all-reduces the partial results with the kind it derives from the
// combiner.
shard.grid @g(shape = 2)

func.func @and_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant -1 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.andi %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @or_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.ori %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @xor_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.xori %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @maxsi_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant -2147483648 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.maxsi %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @minsi_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant 2147483647 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.minsi %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @maxui_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.maxui %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @minui_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant -1 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.minui %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @maxsi_fill7(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant 7 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.maxsi %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}

func.func @sum_rows(%x: tensor<3x8xi32>) -> tensor<3xi32> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<3x8xi32>
  %init = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3xi32>
  %f = linalg.fill ins(%init : i32) outs(%e : tensor<3xi32>) -> tensor<3xi32>
  %r = linalg.reduce ins(%xs : tensor<3x8xi32>) outs(%f : tensor<3xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %o = arith.addi %a, %acc : i32
      linalg.yield %o : i32
    }
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<3xi32>
  return %r1 : tensor<3xi32>
}
