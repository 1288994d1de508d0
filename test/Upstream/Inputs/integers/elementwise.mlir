// Elementwise integer arithmetic on rows split over 2 processes, then a
// bitwise or of the rows (a split reduction) and a signed max over the
// grid: bitwise, order and shift operations next to the ring ones.
shard.grid @g(shape = 2)

func.func @mix(%x: tensor<8x4xi16>, %y: tensor<8x4xi16>) -> tensor<8x4xi16> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<8x4xi16>
  %ys = shard.shard %y to %s annotate_for_users : tensor<8x4xi16>
  %e = tensor.empty() : tensor<8x4xi16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%xs, %ys : tensor<8x4xi16>, tensor<8x4xi16>) outs(%e : tensor<8x4xi16>) {
    ^bb0(%a: i16, %b: i16, %o: i16):
      %c3 = arith.constant 3 : i16
      %c255 = arith.constant 255 : i16
      %0 = arith.shli %a, %c3 : i16
      %1 = arith.andi %0, %c255 : i16
      %2 = arith.xori %1, %b : i16
      %3 = arith.maxsi %2, %a : i16
      %4 = arith.shrui %3, %c3 : i16
      %5 = arith.muli %4, %b : i16
      %6 = arith.minui %5, %2 : i16
      linalg.yield %6 : i16
  } -> tensor<8x4xi16>
  %r1 = shard.shard %r to %s : tensor<8x4xi16>
  return %r1 : tensor<8x4xi16>
}

func.func @or_cols(%x: tensor<4x8xi8>) -> tensor<4xi8> {
  %s = shard.sharding @g split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<4x8xi8>
  %c = arith.constant 0 : i8
  %e = tensor.empty() : tensor<4xi8>
  %f = linalg.fill ins(%c : i8) outs(%e : tensor<4xi8>) -> tensor<4xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%xs : tensor<4x8xi8>) outs(%f : tensor<4xi8>) {
    ^bb0(%a: i8, %acc: i8):
      %c1 = arith.constant 1 : i8
      %sh = arith.shrsi %a, %c1 : i8
      %o = arith.ori %sh, %acc : i8
      linalg.yield %o : i8
  } -> tensor<4xi8>
  %rep = shard.sharding @g split_axes = [[]] : !shard.sharding
  %r1 = shard.shard %r to %rep : tensor<4xi8>
  return %r1 : tensor<4xi8>
}
