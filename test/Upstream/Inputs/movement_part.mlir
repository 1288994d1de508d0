// movement_in.mlir partitioned by hand: each process its rows; the column
// mean as an average all-reduce of the local column sums.
module {
  shard.grid @grid(shape = 2)
  func.func @rowmin(%x: tensor<2x8xf32>) -> tensor<2xf32> {
    %inf = arith.constant 0x7F800000 : f32
    %e = tensor.empty() : tensor<2xf32>
    %f = linalg.fill ins(%inf : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
    %m = linalg.reduce ins(%x : tensor<2x8xf32>) outs(%f : tensor<2xf32>) dimensions = [1]
      (%in: f32, %acc: f32) {
        %v = arith.minimumf %in, %acc : f32
        linalg.yield %v : f32
      }
    %m2 = tensor.expand_shape %m [[0, 1]] output_shape [2, 1] : tensor<2xf32> into tensor<2x1xf32>
    %c = tensor.concat dim(1) %m2, %m2 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
    %sl = tensor.extract_slice %c[0, 1] [2, 1] [1, 1] : tensor<2x2xf32> to tensor<2x1xf32>
    %r = tensor.collapse_shape %sl [[0, 1]] : tensor<2x1xf32> into tensor<2xf32>
    return %r : tensor<2xf32>
  }
  func.func @colmean(%x: tensor<1x4xf32>) -> tensor<4xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %sum = linalg.reduce ins(%x : tensor<1x4xf32>) outs(%f : tensor<4xf32>) dimensions = [0]
      (%in: f32, %acc: f32) {
        %v = arith.addf %in, %acc : f32
        linalg.yield %v : f32
      }
    %mean = shard.all_reduce %sum on @grid grid_axes = [0] reduction = average : tensor<4xf32> -> tensor<4xf32>
    return %mean : tensor<4xf32>
  }
}
