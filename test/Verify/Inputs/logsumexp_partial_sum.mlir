tv.mesh @mesh axes ["tp"] sizes [2]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x8xf32>
  %l = tv.logsumexp %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  tv.output "l", %l : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0, 1] {
    %x = tv.input "x" : tensor<4x4xf32>
    %p = tv.logsumexp %x dims [1] : tensor<4x4xf32> -> tensor<4xf32>
    %l = tv.all_reduce sum %p {axes = ["tp"]} : tensor<4xf32> -> tensor<4xf32>
    tv.output "l", %l : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:4] = ["x":0]>
tv.lineage #tv.lineage<"x"[0:4, 4:8] = ["x":1]>
tv.lineage #tv.lineage<"l"[0:4] = ["l":0] | ["l":1]>
