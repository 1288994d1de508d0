// Spec: y = x + x. Plan: y = x + transpose(x) (wrong for non-symmetric x).
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4x4xf32>
  %y = tv.add %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  tv.output "y", %y : tensor<4x4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4x4xf32>
    %t = tv.transpose %x perm [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %y = tv.add %x, %t : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    tv.output "y", %y : tensor<4x4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4, 0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4, 0:4] = ["y":0]>
