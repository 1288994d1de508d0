// Safe softmax split over two ranks along the row (as a vocab-parallel
// softmax): local max, all-reduce max, exp(x - m), local sum, all-reduce sum.
tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %y = tv.softmax %x dim 1 : tensor<4x8xf32>
  tv.output "y", %y : tensor<4x8xf32>
  %l = tv.logsumexp %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  tv.output "l", %l : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x4xf32>
    %ml = tv.max %x dims [1] {keepdim} : tensor<4x4xf32> -> tensor<4x1xf32>
    %m = tv.all_reduce max %ml {axes = ["tp"]} : tensor<4x1xf32> -> tensor<4x1xf32>
    %mb = tv.broadcast %m : tensor<4x1xf32> -> tensor<4x4xf32>
    %xs = tv.sub %x, %mb : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %e = tv.exp %xs : tensor<4x4xf32>
    %sl = tv.sum %e dims [1] {keepdim} : tensor<4x4xf32> -> tensor<4x1xf32>
    %s = tv.all_reduce sum %sl {axes = ["tp"]} : tensor<4x1xf32> -> tensor<4x1xf32>
    %sb = tv.broadcast %s : tensor<4x1xf32> -> tensor<4x4xf32>
    %y = tv.div %e, %sb : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "y", %y : tensor<4x4xf32>
    %ls = tv.log %s : tensor<4x1xf32>
    %l1 = tv.add %ls, %m : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
    %l = tv.reshape %l1 : tensor<4x1xf32> -> tensor<4xf32>
    tv.output "l", %l : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:4] = ["x":0]>
tv.lineage #tv.lineage<"x"[0:4, 4:8] = ["x":1]>
tv.lineage #tv.lineage<"y"[0:4, 0:4] = ["y":0]>
tv.lineage #tv.lineage<"y"[0:4, 4:8] = ["y":1]>
tv.lineage #tv.lineage<"l"[0:4] = ["l":0] | ["l":1]>
