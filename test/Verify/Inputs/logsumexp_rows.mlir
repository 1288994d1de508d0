tv.mesh @mesh axes ["dp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %dy = tv.input "dy" : tensor<4xf32>
  %l = tv.logsumexp %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  tv.output "l", %l : tensor<4xf32>
  %dx = tv.logsumexp_grad %x, %dy dims [1] : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  tv.output "dx", %dx : tensor<4x8xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<2x8xf32>
    %dy = tv.input "dy" : tensor<2xf32>
    %l = tv.logsumexp %x dims [1] : tensor<2x8xf32> -> tensor<2xf32>
    tv.output "l", %l : tensor<2xf32>
    %dx = tv.logsumexp_grad %x, %dy dims [1] : tensor<2x8xf32>, tensor<2xf32> -> tensor<2x8xf32>
    tv.output "dx", %dx : tensor<2x8xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2, 0:8] = ["x":0]>
tv.lineage #tv.lineage<"x"[2:4, 0:8] = ["x":1]>
tv.lineage #tv.lineage<"dy"[0:2] = ["dy":0]>
tv.lineage #tv.lineage<"dy"[2:4] = ["dy":1]>
tv.lineage #tv.lineage<"l"[0:2] = ["l":0]>
tv.lineage #tv.lineage<"l"[2:4] = ["l":1]>
tv.lineage #tv.lineage<"dx"[0:2, 0:8] = ["dx":0]>
tv.lineage #tv.lineage<"dx"[2:4, 0:8] = ["dx":1]>
