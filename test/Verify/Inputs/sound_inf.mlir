// Spec: y = x. Plan: y = x + NaN (hex 0x7FF8000000000000). Rat::fromDouble
// maps every non-finite double to 0, so the plan normalizes to x.
tv.mesh @mesh axes ["tp"] sizes [1]
tv.spec @spec {
  %x = tv.input "x" : tensor<4xf32>
  %y = tv.neg %x : tensor<4xf32>
  tv.output "y", %y : tensor<4xf32>
}
tv.plan @plan mesh @mesh micro_batches 1 {
  tv.rank_program [0] {
    %x = tv.input "x" : tensor<4xf32>
    %n = tv.neg %x : tensor<4xf32>
    %y = tv.add_scalar %n, 0x7FF0000000000000 : tensor<4xf32>
    tv.output "y", %y : tensor<4xf32>
  }
}
tv.lineage #tv.lineage<"x"[0:4] = ["x":0]>
tv.lineage #tv.lineage<"y"[0:4] = ["y":0]>
