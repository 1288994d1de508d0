// p2p_in.mlir partitioned by hand.
module {
  shard.grid @grid(shape = 2x2)
  // exp on each block, gathered on process (0, 0) and broadcast from it.
  func.func @gather_bcast(%x: tensor<2x4xf32>) -> tensor<8x4xf32> {
    %e = tosa.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %g = shard.gather %e on @grid grid_axes = [0, 1] gather_axis = 0 root = [0, 0] : (tensor<2x4xf32>) -> tensor<8x4xf32>
    %b = shard.broadcast %g on @grid grid_axes = [0, 1] root = [0, 0] : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %b : tensor<8x4xf32>
  }
  // exp computed on process 0 only, scattered from it.
  func.func @scatter(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
    %c0 = arith.constant 0 : index
    %p = shard.process_linear_index on @grid : index
    %first = arith.cmpi eq, %p, %c0 : index
    %y = scf.if %first -> (tensor<8x4xf32>) {
      %e = tosa.exp %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
      scf.yield %e : tensor<8x4xf32>
    } else {
      scf.yield %x : tensor<8x4xf32>
    }
    %s = shard.scatter %y on @grid grid_axes = [0, 1] scatter_axis = 0 root = [0, 0] : (tensor<8x4xf32>) -> tensor<2x4xf32>
    return %s : tensor<2x4xf32>
  }
  // Each process takes the block of its neighbour along axis 1.
  func.func @swap_shift(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %y = shard.shift %x on @grid grid_axes = [1] shift_axis = 1 offset = 1 rotate : tensor<2x4xf32> -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @swap_p2p(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %c0 = arith.constant 0 : index
    %m:2 = shard.process_multi_index on @grid axes = [] : index, index
    %left = arith.cmpi eq, %m#1, %c0 : index
    %y = scf.if %left -> (tensor<2x4xf32>) {
      %s = shard.send %x on @grid grid_axes = [1] destination = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
      %r = shard.recv %x on @grid grid_axes = [1] source = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
      scf.yield %r : tensor<2x4xf32>
    } else {
      %s = shard.send %x on @grid grid_axes = [1] destination = [0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
      %r = shard.recv %x on @grid grid_axes = [1] source = [0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
      scf.yield %r : tensor<2x4xf32>
    }
    return %y : tensor<2x4xf32>
  }
  func.func @colmin(%x: tensor<1x4xf32>) -> tensor<4xf32> {
    %inf = arith.constant 0x7F800000 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%inf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %m = linalg.reduce ins(%x : tensor<1x4xf32>) outs(%f : tensor<4xf32>) dimensions = [0]
      (%in: f32, %acc: f32) {
        %v = arith.minimumf %in, %acc : f32
        linalg.yield %v : f32
      }
    %r = shard.all_reduce %m on @grid grid_axes = [0, 1] reduction = min : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @insert(%a: tensor<2x2xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %y = tensor.insert_slice %a into %b[0, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @pad(%a: tensor<2x2xf32>) -> tensor<2x4xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
    %y = tensor.insert_slice %a into %z[0, 2] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}
