// collectives_in.mlir partitioned by hand: the contraction's partial sums
// reduce-scattered into row blocks; exp computed on process 0 only and
// broadcast from it.
module {
  shard.grid @grid(shape = 2)
  func.func @rs(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<2x4xf32> {
    %c0 = arith.constant 0.0 : f32
    %z = tensor.empty() : tensor<4x4xf32>
    %zf = linalg.fill ins(%c0 : f32) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%zf : tensor<4x4xf32>) -> tensor<4x4xf32>
    %r = shard.reduce_scatter %m on @grid grid_axes = [0] scatter_axis = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
    return %r : tensor<2x4xf32>
  }
  func.func @bc(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %proc = shard.process_linear_index on @grid : index
    %first = arith.cmpi eq, %proc, %c0 : index
    %y = scf.if %first -> (tensor<4xf32>) {
      %e = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %e : tensor<4xf32>
    } else {
      scf.yield %x : tensor<4xf32>
    }
    %b = shard.broadcast %y on @grid grid_axes = [0] root = [0] : (tensor<4xf32>) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}
