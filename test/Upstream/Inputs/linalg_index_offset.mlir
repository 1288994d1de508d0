// linalg_index.mlir partitioned by hand, with the offset MLIR 22 forgets:
// the block of process p starts at row 2p.
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  shard.grid @grid(shape = 2)
  func.func @idx(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %c2 = arith.constant 2 : index
    %proc = shard.process_multi_index on @grid axes = [0] : index
    %off = arith.muli %proc, %c2 : index
    %0 = tensor.empty() : tensor<2x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<2x4xf32>) outs(%0 : tensor<2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %2 = linalg.index 0 : index
      %g = arith.addi %2, %off : index
      %3 = arith.index_cast %g : index to i32
      %4 = arith.sitofp %3 : i32 to f32
      %5 = arith.addf %in, %4 : f32
      linalg.yield %5 : f32
    } -> tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
}
