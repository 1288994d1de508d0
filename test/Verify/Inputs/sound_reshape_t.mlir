// Spec reshapes [2,3] -> [3,2]; the plan transposes instead (a different permutation).
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<2x3xf32>
  %y = tv.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  tv.output "y", %y : tensor<3x2xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<2x3xf32>
    %y = tv.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    tv.output "y", %y : tensor<3x2xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:2, 0:3] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:3, 0:2] = ["y":0]>
